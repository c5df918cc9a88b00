/**
 * Feature gates, in Kubernetes' syntax: `Name=true,Other=false` or an object
 * `{ Name: true }`. A registry lists every known gate with its stage and default; unknown
 * names and non-boolean values are errors, as in kube-apiserver's `--feature-gates`.
 */
import { describeValue, ErrorCodes, EvenlbError } from './errors.js';

export type FeatureStage = 'Alpha' | 'Beta' | 'GA' | 'Deprecated';

export interface FeatureSpec {
  readonly name: string;
  readonly stage: FeatureStage;
  readonly default: boolean;
  readonly description: string;
}

/** Every gate evenlb knows. */
export const knownFeatureGates = {
  RoundTripLoadBalancing: {
    name: 'RoundTripLoadBalancing',
    stage: 'Beta',
    default: true,
    description:
      'Pick an endpoint on every round trip and key connection pools by endpoint (the analogue of ' +
      "Kubernetes' WebhookRoundTripLoadBalancing). Off: one pool keyed by the service host, the " +
      'endpoint chosen only when a connection is dialled (legacy behaviour, for rollback).',
  },
} as const satisfies Record<string, FeatureSpec>;

export type FeatureGateName = keyof typeof knownFeatureGates;

/** Resolved gate values; immutable. */
export class FeatureGates {
  readonly #values: Readonly<Record<FeatureGateName, boolean>>;

  private constructor(values: Record<FeatureGateName, boolean>) {
    this.#values = Object.freeze(values);
  }

  enabled(name: FeatureGateName): boolean {
    return this.#values[name];
  }

  /** Every gate with its resolved value. */
  toObject(): Readonly<Record<FeatureGateName, boolean>> {
    return this.#values;
  }

  /** `Name=true,Other=false`, sorted by name. */
  toString(): string {
    return Object.entries(this.#values)
      .map(([k, v]) => `${k}=${v}`)
      .sort()
      .join(',');
  }

  /**
   * Parses `"A=true,B=false"`, an object, an existing `FeatureGates`, or undefined (defaults).
   *
   * @example
   * FeatureGates.parse('RoundTripLoadBalancing=false').enabled('RoundTripLoadBalancing') // false
   */
  static parse(input: string | Readonly<Record<string, unknown>> | FeatureGates | undefined): FeatureGates {
    if (input instanceof FeatureGates) return input;
    const values = Object.fromEntries(Object.values(knownFeatureGates).map((g) => [g.name, g.default])) as Record<
      FeatureGateName,
      boolean
    >;
    const set = (name: string, value: unknown): void => {
      if (!Object.hasOwn(knownFeatureGates, name)) {
        throw new EvenlbError(
          ErrorCodes.INVALID_FEATURE_GATE,
          `unknown feature gate ${JSON.stringify(name)}; known gates: ${Object.keys(knownFeatureGates).join(', ')}`,
          { details: { gate: name } },
        );
      }
      if (typeof value !== 'boolean') {
        throw new EvenlbError(
          ErrorCodes.INVALID_FEATURE_GATE,
          `feature gate ${name} must be true or false; received ${describeValue(value)}`,
          { details: { gate: name } },
        );
      }
      values[name as FeatureGateName] = value;
    };
    if (input === undefined) return new FeatureGates(values);
    if (typeof input === 'string') {
      for (const raw of input.split(',')) {
        const item = raw.trim();
        if (item === '') continue;
        const eq = item.indexOf('=');
        if (eq < 0) {
          throw new EvenlbError(
            ErrorCodes.INVALID_FEATURE_GATE,
            `feature gate ${JSON.stringify(item)} must be of the form Name=true|false`,
            { details: { gate: item } },
          );
        }
        const name = item.slice(0, eq).trim();
        const text = item
          .slice(eq + 1)
          .trim()
          .toLowerCase();
        set(name, text === 'true' ? true : text === 'false' ? false : item.slice(eq + 1).trim());
      }
      return new FeatureGates(values);
    }
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      throw new EvenlbError(
        ErrorCodes.INVALID_FEATURE_GATE,
        `feature gates must be a string "Name=true,..." or an object; received ${describeValue(input)}`,
      );
    }
    for (const [name, value] of Object.entries(input)) set(name, value);
    return new FeatureGates(values);
  }
}
