/**
 * The `evenlb` load-balancing config of a gRPC service config:
 *
 * ```json
 * { "loadBalancingConfig": [{ "evenlb": { "policy": "least-request" } }] }
 * ```
 *
 * Fields: `policy` (any registered evenlb policy, default `least-request`), `policyOptions`
 * (validated by that policy), `outlierDetection` (`false` or the outlier detector's options),
 * `hashHeader` (the call-metadata key whose value hash policies hash, default
 * `x-evenlb-hash-key`), `failureCodes` (gRPC status codes that count as an endpoint failure),
 * `statsWindowMs`, `name` (the channel's name in stats and metrics), and the slow-start, herding
 * guard and zone routing fields of a BalancedAgent route (`slowStartMs`, `slowStartAggression`,
 * `slowStartMinWeightPercent`, `herdingGuard`, `zoneRouting`, `pushback`) and `loadProbes` (default off
 * here). Calls ending RESOURCE_EXHAUSTED push back; policies that read load reports read the
 * `endpoint-load-metrics` entry of a call's trailing metadata. Parsed once with the
 * project's options parser; errors name the field.
 *
 * grpc-js drops a config whose parser throws and silently falls back to `pick_first`, so a bad
 * `evenlb` config is kept as a config *carrying its error*: the policy then fails every call with
 * `UNAVAILABLE` and that error's text, which names the field. `evenlbServiceConfig()` validates
 * eagerly for callers who want the error at startup.
 */
import { outlierDetectionSpec } from '../balancing/outlier-detector.js';
import { ensureBuiltinPolicies } from '../balancing/policies/index.js';
import { registeredPolicies } from '../balancing/policy.js';
import { parseHerdingGuardOptions } from '../balancing/shaping/herding-guard.js';
import { parseZoneRoutingOptions } from '../balancing/shaping/zone-preference.js';
import { balancerShaping, clusterSettingsSpec } from '../cluster/cluster-options.js';
import { DEFAULT_GRPC_FAILURE_CODES } from '../cluster/grpc-outcome.js';
import { type EvenlbError, isEvenlbError } from '../core/errors.js';
import { type Input, opt, optionError, type Parsed, parseOptions } from '../core/options.js';
import type { TypedLoadBalancingConfig } from './grpc-module.js';

/** The name the policy is registered under in grpc-js. */
export const EVENLB_POLICY_NAME = 'evenlb';

/**
 * gRPC status codes counted as endpoint failures by default: UNKNOWN, DEADLINE_EXCEEDED,
 * INTERNAL, UNAVAILABLE, DATA_LOSS — the one rule the proxy's HTTP/2 path counts by too.
 */
export const DEFAULT_FAILURE_CODES: readonly number[] = DEFAULT_GRPC_FAILURE_CODES;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const METADATA_KEY = /^[0-9a-z_.-]+$/;

export const grpcBalancingSpec = {
  /** A registered evenlb policy; default `least-request`. */
  policy: opt.string({ nonEmpty: true, default: 'least-request' }),
  /** The policy's own options. */
  policyOptions: opt.custom<unknown, { optional: true }>('policy options', (_v): _v is unknown => true, {
    optional: true,
  }),
  /**
   * Outlier detection options (`outlierDetectionSpec`), or `false` to turn it off; default on
   * with defaults. Kept as given here and checked by `parseGrpcBalancingConfig` with the
   * detector's own spec (errors name `outlierDetection`), so callers get that spec's input type.
   */
  outlierDetection: opt.custom<
    Record<string, unknown> | false,
    { optional: true },
    Input<typeof outlierDetectionSpec> | false
  >(
    'false or an object of outlier detection options',
    (v): v is Record<string, unknown> | false => v === false || isObject(v),
    { optional: true },
  ),
  /** Call-metadata key hashed by `ring-hash`, `maglev` and `source-hash`; calls without it pick at random. */
  hashHeader: opt.custom<string, { default: string }>(
    'a lower-case metadata key (0-9 a-z _ . -)',
    (v): v is string => typeof v === 'string' && METADATA_KEY.test(v),
    { default: 'x-evenlb-hash-key' },
  ),
  /**
   * gRPC status codes that count as an endpoint failure (outlier detection, error counts), by
   * the shared rule `grpcOutcome`; default `DEFAULT_FAILURE_CODES`.
   */
  failureCodes: opt.custom<readonly number[], { default: readonly number[] }>(
    'an array of gRPC status codes (integers 1-16)',
    (v): v is readonly number[] =>
      Array.isArray(v) && v.every((c) => Number.isInteger(c) && (c as number) >= 1 && (c as number) <= 16),
    { default: DEFAULT_FAILURE_CODES },
  ),
  /** Slow start, the herding guard and zone routing: the same fields as a BalancedAgent route's. */
  slowStartMs: clusterSettingsSpec.slowStartMs,
  slowStartAggression: clusterSettingsSpec.slowStartAggression,
  slowStartMinWeightPercent: clusterSettingsSpec.slowStartMinWeightPercent,
  herdingGuard: clusterSettingsSpec.herdingGuard,
  zoneRouting: clusterSettingsSpec.zoneRouting,
  /** The pushback penalty for endpoints whose calls end RESOURCE_EXHAUSTED, as a BalancedAgent route's `pushback`. */
  pushback: clusterSettingsSpec.pushback,
  /**
   * Load probes for policies that read them (`prequal`), as a BalancedAgent route's
   * `loadProbes`: set `port` to where the servers serve their load document (a gRPC server
   * answers HTTP/1.1 probes only on a port of its own: `serveLoadDocument` in `evenlb/server`).
   * Default off for gRPC: without probes, `prequal` is `least-request`.
   */
  loadProbes: clusterSettingsSpec.loadProbes,
  /** Sliding window of the per-endpoint request counts in stats (ms); default 60 s. */
  statsWindowMs: opt.number({ min: 10, default: 60_000 }),
  /** The channel's name in stats and metrics; default the target URI. */
  name: opt.string({ nonEmpty: true, optional: true }),
};

export type GrpcBalancingConfig = Parsed<typeof grpcBalancingSpec>;

/**
 * What `evenlbServiceConfig` and the service config accept, derived from `grpcBalancingSpec`
 * (each field's meaning and default is the TSDoc of its spec entry): `herdingGuard` and
 * `zoneRouting` take their specs' input types, `outlierDetection` the outlier detector's.
 */
export interface GrpcBalancingConfigInput extends Input<typeof grpcBalancingSpec> {}

const COMPONENT = 'evenlb load-balancing config';

/**
 * Validates an `evenlb` load-balancing config: the fields, the policy name, the policy's options
 * and the outlier detection options. Throws `EVENLB_INVALID_OPTION` naming the field.
 *
 * @example
 * parseGrpcBalancingConfig({ policy: 'peak-ewma', policyOptions: { decayMs: 5000 } });
 */
export function parseGrpcBalancingConfig(input: unknown): GrpcBalancingConfig {
  const parsed = parseOptions(COMPONENT, input, grpcBalancingSpec);
  ensureBuiltinPolicies();
  const policy = registeredPolicies().find((p) => p.name === parsed.policy);
  if (policy === undefined) {
    const names = registeredPolicies().map((p) => JSON.stringify(p.name));
    throw optionError(COMPONENT, 'policy', `one of ${names.join(', ')}`, parsed.policy);
  }
  policy.parseOptions(parsed.policyOptions);
  if (parsed.outlierDetection !== undefined && parsed.outlierDetection !== false) {
    parseOptions(`${COMPONENT} outlierDetection`, parsed.outlierDetection, outlierDetectionSpec);
  }
  const shaping = balancerShaping(parsed);
  if (shaping.herdingGuard !== undefined) parseHerdingGuardOptions(shaping.herdingGuard, `${COMPONENT} herdingGuard`);
  parseZoneRoutingOptions(shaping.zoneRouting, `${COMPONENT} zoneRouting`);
  return parsed;
}

/**
 * The grpc-js config object of the `evenlb` policy: the parsed config, or the error that made
 * it invalid (see the module comment for why it is not thrown).
 */
export class EvenlbLoadBalancingConfig implements TypedLoadBalancingConfig {
  readonly raw: unknown;
  readonly config: GrpcBalancingConfig | undefined;
  readonly error: EvenlbError | Error | undefined;
  /** A stable text of the raw config: a changed config rebuilds the balancer. */
  readonly fingerprint: string;

  constructor(raw: unknown, config: GrpcBalancingConfig | undefined, error: EvenlbError | Error | undefined) {
    this.raw = raw;
    this.config = config;
    this.error = error;
    this.fingerprint = JSON.stringify(raw ?? {});
  }

  getLoadBalancerName(): string {
    return EVENLB_POLICY_NAME;
  }

  toJsonObject(): object {
    return { [EVENLB_POLICY_NAME]: this.raw ?? {} };
  }

  /** grpc-js calls this with the value under `"evenlb"` in the service config. */
  static createFromJson(obj: unknown): EvenlbLoadBalancingConfig {
    try {
      return new EvenlbLoadBalancingConfig(obj, parseGrpcBalancingConfig(obj ?? {}), undefined);
    } catch (err) {
      return new EvenlbLoadBalancingConfig(obj, undefined, isEvenlbError(err) ? err : (err as Error));
    }
  }
}

/**
 * A `grpc.service_config` channel option value choosing the `evenlb` policy, validated now
 * (throws naming the field).
 *
 * @example
 * new EchoClient('dns:///echo.prod.svc.cluster.local:50051', creds, {
 *   'grpc.service_config': evenlbServiceConfig({ policy: 'peak-ewma' }),
 * });
 */
export function evenlbServiceConfig(config: GrpcBalancingConfigInput = {}): string {
  parseGrpcBalancingConfig(config);
  return JSON.stringify({ loadBalancingConfig: [{ [EVENLB_POLICY_NAME]: config }] });
}
