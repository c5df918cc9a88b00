/**
 * The balancing-policy contract and its registry. A policy parses its options once into a
 * typed object, then `create()` returns a stateful `PickerBuilder` for one balancer; the
 * builder turns each endpoint list into a pick function. State that must survive endpoint
 * changes (a round-robin position, smooth-WRR credits) lives in the builder, not the picker.
 *
 * Policies register by name in one place (`policies/index.ts`); the conformance suite runs
 * every registered policy.
 */
import type { Clock } from '../core/clock.js';
import type { Endpoint } from '../core/endpoint.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import type { Random } from '../core/random.js';
import type { LoadOptions, LoadTracker } from './endpoint-load.js';
import type { PickFn, TrackedEndpoint } from './picker.js';

/**
 * Asks endpoints for their load out of band (Prequal-style probes). `probe()` only queues the
 * question and returns at once — a picker may call it, since it does no I/O itself; the answer
 * arrives later through `target.load.probed(inFlight, latencyMs)`. A probe that fails or times
 * out leaves the record as it was. Each transport supplies its own (an HTTP request to the
 * endpoint's load port, a simulated pod's answer on virtual time).
 */
export interface LoadProber {
  probe(target: TrackedEndpoint): void;
}

/**
 * What endpoints say of themselves that a policy reads: `reports` — load reports on responses
 * (`endpoint-load-metrics`, fed through `EndpointLoad.report`); `probes` — answers to
 * `PolicyEnv.prober`. Transports parse report headers and run a prober only for policies that
 * list them; every policy still picks (falls back) when they never come.
 */
export type LoadSignal = 'reports' | 'probes';

/**
 * Weights a policy derives from what endpoints report (gRFC A58's weighted round robin). The
 * `Balancer` asks for them when it plans weights — on every endpoint change and on its refresh
 * tick, at most every `updatePeriodMs` — and multiplies each endpoint's own weight by its
 * multiplier, so pickers keep following plain weights and `pick()` reads no report.
 */
export interface ReportedWeights {
  /** How often the multipliers are recomputed, ms (A58's `weight_update_period`). */
  readonly updatePeriodMs: number;
  /**
   * Writes into `out[i]` the multiplier (> 0, relative: their scale does not matter) for
   * `endpoints[i]`, from the load records in `loads` as of `nowMs`.
   */
  multipliers(endpoints: readonly Endpoint[], loads: LoadTracker, nowMs: number, out: Float64Array): void;
}

export interface PolicyEnv {
  readonly random: Random;
  readonly clock: Clock;
  /** How the policy may probe endpoints; absent when the transport cannot (policies fall back). */
  readonly prober?: LoadProber;
}

export interface PickerBuilder {
  /** A pick function over a non-empty list of eligible endpoints. */
  build(endpoints: readonly TrackedEndpoint[]): PickFn;
}

export interface BalancingPolicy<O = unknown> {
  readonly name: string;
  /** One line for `--help` and docs. */
  readonly description: string;
  /**
   * `load`: spreads requests by count, weight or load signals.
   * `hash`: maps a request key (`PickContext.hash`) to a stable endpoint; spreads evenly only
   * over many distinct keys.
   */
  readonly kind: 'load' | 'hash';
  /**
   * True when the policy deliberately spreads evenly regardless of endpoint weight (plain
   * `round-robin`, as in gRPC and IPVS `rr`). Absent or false: picks follow weights.
   */
  readonly ignoresWeights?: boolean;
  /** Validates and freezes the policy's options (`undefined` → defaults). */
  parseOptions(input: unknown): O;
  create(options: O, env: PolicyEnv): PickerBuilder;
  /**
   * Load-signal settings the policy's options fix (e.g. `peak-ewma`'s `defaultRttMs` and
   * `decayMs`). The `Balancer` applies them to the `LoadTracker` it creates; only fields the
   * caller actually set are returned, so defaults never conflict with `BalancerOptions.loadOptions`.
   */
  loadOptions?(options: O): Partial<LoadOptions>;
  /**
   * For "power of d choices" policies: how many candidates a pick compares (d). A policy that
   * declares it compares load signals, so the `Balancer`'s herding guard applies to it.
   */
  choiceCount?(options: O): number;
  /** What endpoints must report for the policy to work as designed (see `LoadSignal`); none when absent. */
  readonly loadSignals?: readonly LoadSignal[];
  /**
   * For policies weighted by load reports: a fresh, stateful weight source for one balancer
   * (see `ReportedWeights`). The `Balancer` re-plans with it on its weight refresh tick.
   */
  reportedWeights?(options: O): ReportedWeights;
}

const registry = new Map<string, BalancingPolicy>();

/** Registers a policy under its name; a name may be registered once. */
export function registerPolicy<O>(policy: BalancingPolicy<O>): void {
  if (registry.has(policy.name)) throw new Error(`balancing policy ${policy.name} is already registered`);
  registry.set(policy.name, policy as BalancingPolicy);
}

/** The policy registered as `name`, or an `EVENLB_UNKNOWN_POLICY` error listing the known ones. */
export function getPolicy(name: string): BalancingPolicy {
  const policy = registry.get(name);
  if (policy === undefined) {
    throw new EvenlbError(
      ErrorCodes.UNKNOWN_POLICY,
      `unknown balancing policy ${JSON.stringify(name)}; known policies: ${[...registry.keys()].join(', ')}`,
      { details: { policy: name } },
    );
  }
  return policy;
}

/** Every registered policy, in registration order. */
export function registeredPolicies(): readonly BalancingPolicy[] {
  return [...registry.values()];
}
