/**
 * The stateful half of balancing. A `Balancer` receives endpoint snapshots (and the outlier
 * detector's ejections), keeps the load records, and publishes a fresh immutable `Picker`
 * whenever what may be picked changes. The client, the proxy and the simulator all balance
 * through this class.
 */
import { type Clock, systemClock } from '../core/clock.js';
import { EndpointSet, type EndpointSetDiff } from '../core/endpoint-set.js';
import { describeValue, ErrorCodes, EvenlbError } from '../core/errors.js';
import { createRandom, type Random } from '../core/random.js';
import { type LoadOptions, LoadTracker, parseLoadOptions } from './endpoint-load.js';
import {
  NONE,
  type NoneReason,
  type PickContext,
  type Picker,
  type PickFn,
  type PickResult,
  type TrackedEndpoint,
} from './picker.js';
import { ensureBuiltinPolicies } from './policies/index.js';
import { type BalancingPolicy, getPolicy, type PickerBuilder } from './policy.js';

export interface BalancerOptions {
  /** A registered policy name; default `least-request`. */
  readonly policy?: string;
  /** The policy's own options, validated by the policy. */
  readonly policyOptions?: unknown;
  /** Default: the shared `loads` tracker's clock, else the system clock. */
  readonly clock?: Clock;
  readonly random?: Random;
  /**
   * Load-signal tuning (default RTT, EWMA decay); missing fields take the defaults. Ignored
   * when `loads` is given. A policy that declares load options (`peak-ewma`'s `defaultRttMs`,
   * `decayMs`) applies them here; setting the same field differently in both places is an error.
   */
  readonly loadOptions?: Partial<LoadOptions>;
  /**
   * Share another tracker's load records instead of creating one (two balancers over the same
   * endpoints see one load signal). The policy's declared load options must match its options.
   */
  readonly loads?: LoadTracker;
}

/**
 * The load options a balancer's `LoadTracker` uses: defaults, then `loadOptions`, then what
 * the policy's options declare (`BalancingPolicy.loadOptions`). A field set differently by the
 * caller and by the policy is an `EVENLB_INVALID_OPTION` error naming both, never a silent pick.
 *
 * @example
 * const policy = getPolicy('peak-ewma');
 * resolveLoadOptions(policy, policy.parseOptions({ decayMs: 5000 })) // → { defaultRttMs: 30, decayMs: 5000 }
 */
export function resolveLoadOptions(
  policy: BalancingPolicy,
  parsedPolicyOptions: unknown,
  loadOptions?: Partial<LoadOptions>,
): LoadOptions {
  const base = parseLoadOptions(loadOptions, 'Balancer loadOptions');
  const declared = policy.loadOptions?.(parsedPolicyOptions) ?? {};
  const out: { -readonly [K in keyof LoadOptions]: number } = { ...base };
  for (const field of ['defaultRttMs', 'decayMs'] as const) {
    const fromPolicy = declared[field];
    if (fromPolicy === undefined) continue;
    const fromCaller = loadOptions?.[field];
    if (fromCaller !== undefined && fromCaller !== fromPolicy)
      throw loadConflict(policy.name, field, fromPolicy, fromCaller);
    out[field] = fromPolicy;
  }
  return Object.freeze(out);
}

function loadConflict(
  policy: string,
  field: string,
  fromPolicy: number,
  other: unknown,
  where = 'loadOptions',
): EvenlbError {
  return new EvenlbError(
    ErrorCodes.INVALID_OPTION,
    `Balancer: ${policy} policy option "${field}" is ${fromPolicy} but ${where}.${field} is ${describeValue(other)}; set it in one place`,
    { details: { component: 'Balancer', field: `policyOptions.${field}`, expected: String(fromPolicy) } },
  );
}

class PublishedPicker implements Picker {
  readonly endpoints: readonly TrackedEndpoint[];
  readonly #pickFn: PickFn | undefined;
  readonly #none: NoneReason;

  constructor(endpoints: readonly TrackedEndpoint[], pickFn: PickFn | undefined, none: NoneReason) {
    this.endpoints = endpoints;
    this.#pickFn = pickFn;
    this.#none = none;
  }

  pick(context?: PickContext): PickResult {
    const fn = this.#pickFn;
    if (fn === undefined) return NONE[this.#none];
    const picked = fn(context);
    const exclude = context?.exclude;
    if (exclude === undefined || picked.endpoint.key !== exclude || this.endpoints.length === 1) return picked;
    // Retry on another endpoint: ask the policy again a few times, then take the first other one.
    for (let i = 0; i < 3; i++) {
      const again = fn(context);
      if (again.endpoint.key !== exclude) return again;
    }
    for (const t of this.endpoints) if (t.endpoint.key !== exclude) return t.result;
    return picked;
  }
}

export class Balancer {
  readonly policy: BalancingPolicy;
  readonly loads: LoadTracker;
  readonly #builder: PickerBuilder;
  #set: EndpointSet = EndpointSet.EMPTY;
  #ejected: ReadonlySet<string> = new Set();
  #picker: Picker = new PublishedPicker([], undefined, 'no-endpoints');
  readonly #listeners = new Set<(picker: Picker) => void>();

  constructor(options: BalancerOptions = {}) {
    ensureBuiltinPolicies();
    this.policy = getPolicy(options.policy ?? 'least-request');
    const clock = options.clock ?? options.loads?.clock ?? systemClock;
    const parsed = this.policy.parseOptions(options.policyOptions);
    if (options.loads === undefined) {
      this.loads = new LoadTracker(clock, resolveLoadOptions(this.policy, parsed, options.loadOptions));
    } else {
      // A shared tracker is already configured: the policy's declared settings must agree with it.
      const declared = this.policy.loadOptions?.(parsed) ?? {};
      for (const field of ['defaultRttMs', 'decayMs'] as const) {
        const v = declared[field];
        if (v !== undefined && v !== options.loads.options[field]) {
          throw loadConflict(this.policy.name, field, v, options.loads.options[field], 'the shared load tracker');
        }
      }
      this.loads = options.loads;
    }
    this.#builder = this.policy.create(parsed, { clock, random: options.random ?? createRandom() });
  }

  /** The current immutable picker. Read it per request; it is replaced on every change. */
  get picker(): Picker {
    return this.#picker;
  }

  get endpointSet(): EndpointSet {
    return this.#set;
  }

  get ejected(): ReadonlySet<string> {
    return this.#ejected;
  }

  /** Installs a new endpoint snapshot; returns what changed. */
  update(set: EndpointSet): EndpointSetDiff {
    const diff = EndpointSet.diff(this.#set, set);
    this.#set = set;
    this.loads.prune(set);
    this.#rebuild();
    return diff;
  }

  /** Endpoint keys outlier detection has ejected; they get no new picks. */
  setEjected(keys: ReadonlySet<string>): void {
    this.#ejected = new Set(keys);
    this.#rebuild();
  }

  /** Calls `listener` with every newly published picker; returns an unsubscribe function. */
  onPicker(listener: (picker: Picker) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #rebuild(): void {
    const eligible = this.#set.eligible();
    const kept = this.#ejected.size === 0 ? eligible : eligible.filter((e) => !this.#ejected.has(e.key));
    let none: NoneReason = 'no-endpoints';
    if (this.#set.size > 0) none = eligible.length === 0 ? 'none-ready' : 'all-ejected';
    const tracked: TrackedEndpoint[] = kept.map((endpoint) => {
      const load = this.loads.get(endpoint.key);
      return Object.freeze({ endpoint, load, result: Object.freeze({ type: 'picked' as const, endpoint, load }) });
    });
    Object.freeze(tracked);
    const fn = tracked.length > 0 ? this.#builder.build(tracked) : undefined;
    this.#picker = new PublishedPicker(tracked, fn, none);
    for (const listener of this.#listeners) listener(this.#picker);
  }
}
