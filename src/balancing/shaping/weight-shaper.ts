/**
 * The weights a `Balancer` hands its policy, as they change over time: each eligible
 * endpoint's own weight × its slow-start factor × the herding guard's draw weight × the zone
 * preference. The Balancer asks for a plan on every endpoint change and, while anything is
 * still moving (a ramp, a guard, the zone controller), again on a coarse tick, publishing a
 * new picker only when a weight actually changed — so `pick()` stays a plain read of a
 * precomputed picker.
 *
 * Readiness is what starts a ramp: an endpoint entering the set of picked endpoints (ready and
 * not ejected) after the first snapshot — a new pod, one that was not ready, or one back from
 * outlier ejection. The endpoints of the first snapshot are taken as already warm.
 *
 * Two more factors join while they apply: the weights a policy derives from load reports
 * (`ReportedWeights`, recomputed at most every `updatePeriodMs`; the plan then keeps moving
 * while there are endpoints), and the pushback penalty (see `pushback-penalty.ts`; moving while
 * an endpoint is inside its window).
 *
 * Only policies that follow weights are shaped: hash policies would remap keys on every tick,
 * and `round-robin` ignores weights by design — it gets its endpoints' own weights times the
 * pushback penalty alone (`shapesPushback` without `followsWeights`) and reads only that ratio.
 */
import type { Clock } from '../../core/clock.js';
import type { Endpoint } from '../../core/endpoint.js';
import type { EndpointSet } from '../../core/endpoint-set.js';
import type { LoadTracker } from '../endpoint-load.js';
import type { ReportedWeights } from '../policy.js';
import { guardDrawWeight, type HerdingGuardOptions, medianLatencyMs, responsesOf } from './herding-guard.js';
import { type PushbackOptions, pushbackMultiplier } from './pushback-penalty.js';
import { type SlowStartOptions, slowStartFactor } from './slow-start.js';
import { ZonePreference, type ZoneRoutingOptions, type ZoneRoutingState } from './zone-preference.js';

export interface WeightShaperOptions {
  readonly slowStart: SlowStartOptions;
  readonly herdingGuard: HerdingGuardOptions | false;
  readonly zoneRouting: ZoneRoutingOptions;
  /** Candidates compared per pick (d) for "power of d choices" policies; undefined: no guard. */
  readonly choiceCount: number | undefined;
  /** False for hash policies and `round-robin`: the plan is the endpoints' own weights. */
  readonly followsWeights: boolean;
  /** The pushback penalty, or false when off. */
  readonly pushback: PushbackOptions | false;
  /** True for every `load` policy (round-robin included); false for hash policies, which pushback never moves. */
  readonly shapesPushback: boolean;
  /** The policy's weights from load reports (`report-weighted`), if it has them. */
  readonly reportedWeights?: ReportedWeights | undefined;
}

/** One endpoint of a plan with the weight its picker uses. */
export interface ShapedEndpoint {
  readonly endpoint: Endpoint;
  /** Effective relative weight (> 0). */
  readonly weight: number;
  /** Slow-start multiplier now, in (0, 1]. */
  readonly slowStart: number;
  /** True while the herding guard holds the endpoint's draw weight down. */
  readonly guarded: boolean;
}

/** The median in-flight count of the endpoints in `kept` that are not in `skip`; 0 when none. */
function medianInFlight(kept: readonly Endpoint[], loads: LoadTracker, skip: ReadonlyMap<string, number>): number {
  const values: number[] = [];
  for (const e of kept) if (!skip.has(e.key)) values.push(loads.peek(e.key)?.inFlight ?? 0);
  if (values.length === 0) return 0;
  values.sort((a, b) => a - b);
  return values[values.length >> 1] as number;
}

/**
 * Per endpoint list (`kept`, usually a snapshot's frozen `eligible()` array, the same object
 * for every balancer fed that snapshot): its key set and its unshaped plan. Both are read-only
 * once built, so a fleet of balancers over one snapshot shares one copy instead of each
 * building its own.
 */
const keySets = new WeakMap<readonly Endpoint[], ReadonlySet<string>>();
const plainPlans = new WeakMap<readonly Endpoint[], readonly ShapedEndpoint[]>();

function keySet(kept: readonly Endpoint[]): ReadonlySet<string> {
  let keys = keySets.get(kept);
  if (keys === undefined) {
    const set = new Set<string>();
    for (const e of kept) set.add(e.key);
    keys = set;
    if (Object.isFrozen(kept)) keySets.set(kept, keys);
  }
  return keys;
}

/** The plan of endpoints at their own weights (nothing ramping, guarded or zone-shaped). */
function plainPlan(kept: readonly Endpoint[]): readonly ShapedEndpoint[] {
  let plan = plainPlans.get(kept);
  if (plan === undefined) {
    plan = Object.freeze(
      kept.map((endpoint) => Object.freeze({ endpoint, weight: endpoint.weight, slowStart: 1, guarded: false })),
    );
    if (Object.isFrozen(kept)) plainPlans.set(kept, plan);
  }
  return plan;
}

export class WeightShaper {
  readonly options: WeightShaperOptions;
  readonly zone: ZonePreference;
  readonly #clock: Clock;
  /** Clock ms when each ramping endpoint became ready. */
  readonly #readySince = new Map<string, number>();
  /** Responses seen from each guarded endpoint when its guard began. */
  readonly #guardFrom = new Map<string, number>();
  #known: ReadonlySet<string> | undefined;
  /** Until when (clock ms) some endpoint is inside its pushback window, as of the last plan or pushback. */
  #pushbackUntilMs = Number.NEGATIVE_INFINITY;
  /** The reported-weight multipliers of `#reportedFor`, computed at `#reportedAtMs`. */
  #reported: Float64Array | undefined;
  #reportedFor: readonly Endpoint[] | undefined;
  #reportedAtMs = Number.NEGATIVE_INFINITY;

  constructor(options: WeightShaperOptions, clock: Clock) {
    this.options = options;
    this.zone = new ZonePreference(options.zoneRouting);
    this.#clock = clock;
  }

  /** True while a plan may change with time alone: keep ticking. */
  get moving(): boolean {
    return (
      this.#readySince.size > 0 ||
      this.#guardFrom.size > 0 ||
      this.zone.active ||
      (this.options.reportedWeights !== undefined && this.#known !== undefined && this.#known.size > 0) ||
      this.#clock.now() < this.#pushbackUntilMs
    );
  }

  /**
   * An endpoint pushed back (now): true when the penalty applies to this policy, so the caller
   * should re-plan; the plan keeps moving until the window has passed.
   */
  pushedBack(): boolean {
    const o = this.options.pushback;
    if (o === false || !this.options.shapesPushback) return false;
    this.#pushbackUntilMs = Math.max(this.#pushbackUntilMs, this.#clock.now() + o.windowMs);
    return true;
  }

  /**
   * Follows a new list of picked endpoints (`kept`: eligible and not ejected): starts the ramp
   * and guard of those that entered it, forgets those that left.
   */
  track(set: EndpointSet, eligible: readonly Endpoint[], kept: readonly Endpoint[], loads: LoadTracker): void {
    if (!this.options.followsWeights) return;
    const now = this.#clock.now();
    const keys = keySet(kept);
    const known = this.#known;
    if (known === undefined) {
      if (kept.length > 0) this.#known = keys;
    } else {
      const guard = this.options.herdingGuard;
      const entered = kept.filter((e) => !known.has(e.key));
      const seed =
        guard !== false && guard.seedLatency && entered.length > 0
          ? medianLatencyMs(kept.filter((e) => known.has(e.key)).map((e) => loads.get(e.key)))
          : undefined;
      for (const e of entered) {
        if (this.options.slowStart.windowMs > 0) this.#readySince.set(e.key, now);
        const load = loads.get(e.key);
        if (seed !== undefined) load.seed(seed, now);
        if (guard !== false && this.options.choiceCount !== undefined) this.#guardFrom.set(e.key, responsesOf(load));
      }
      this.#known = keys;
    }
    for (const key of this.#readySince.keys()) if (!keys.has(key)) this.#readySince.delete(key);
    for (const key of this.#guardFrom.keys()) if (!keys.has(key)) this.#guardFrom.delete(key);
    this.zone.update(set, eligible);
  }

  /**
   * Guarded endpoints (as of the last plan) and the response count of their load record at
   * which the guard lifts: the caller may re-plan then instead of waiting for its tick.
   */
  guardLifts(): ReadonlyMap<string, number> {
    const guard = this.options.herdingGuard;
    const lifts = new Map<string, number>();
    if (guard === false) return lifts;
    for (const [key, from] of this.#guardFrom) lifts.set(key, from + guard.minResponses);
    return lifts;
  }

  /** One zone-controller step on the current figures (called on each tick). */
  step(kept: readonly Endpoint[], loads: LoadTracker): void {
    if (this.options.followsWeights) this.zone.step(kept, loads);
  }

  /** The endpoints to pick from now, with their effective weights; endpoints weighted 0 are left out. */
  plan(kept: readonly Endpoint[], loads: LoadTracker): readonly ShapedEndpoint[] {
    if (!this.moving) return plainPlan(kept);
    const now = this.#clock.now();
    const penalties = this.#pushbackPenalties(kept, loads, now);
    if (!this.options.followsWeights) {
      if (penalties === undefined) return plainPlan(kept);
      return kept.map((endpoint, i) => ({
        endpoint,
        weight: endpoint.weight * (penalties[i] as number),
        slowStart: 1,
        guarded: false,
      }));
    }
    const reported = this.#reportedMultipliers(kept, loads, now);
    const guard = this.options.herdingGuard;
    const guarded = new Set<string>();
    if (guard !== false && this.#guardFrom.size > 0) {
      // History has built once the endpoint has answered `minResponses` times, or once it
      // carries as many requests in flight as a typical endpoint (it no longer looks free).
      const typical = medianInFlight(kept, loads, this.#guardFrom);
      for (const [key, from] of this.#guardFrom) {
        const load = loads.peek(key);
        if (load !== undefined && responsesOf(load) - from < guard.minResponses && load.inFlight < typical) {
          guarded.add(key);
        } else {
          this.#guardFrom.delete(key);
        }
      }
    }
    const guardWeight =
      guard === false || guarded.size === 0 || this.options.choiceCount === undefined
        ? 1
        : guardDrawWeight(guard.maxShareMultiple, this.options.choiceCount, guarded.size, kept.length - guarded.size);
    const shaped: { endpoint: Endpoint; weight: number; slowStart: number; guarded: boolean }[] = [];
    for (const [i, endpoint] of kept.entries()) {
      const since = this.#readySince.get(endpoint.key);
      let slowStart = 1;
      if (since !== undefined) {
        slowStart = slowStartFactor(now - since, this.options.slowStart);
        if (slowStart >= 1) this.#readySince.delete(endpoint.key);
      }
      const isGuarded = guarded.has(endpoint.key);
      shaped.push({
        endpoint,
        weight:
          endpoint.weight *
          slowStart *
          (isGuarded ? guardWeight : 1) *
          (reported === undefined ? 1 : (reported[i] as number)) *
          (penalties === undefined ? 1 : (penalties[i] as number)),
        slowStart,
        guarded: isGuarded,
      });
    }
    if (!this.zone.active) return shaped;
    // Zone preference: the local zone gets (1 - out) of the weight, the others `out`, each
    // split in proportion to the weights above.
    let localTotal = 0;
    let remoteTotal = 0;
    for (const s of shaped) {
      if (this.zone.isLocal(s.endpoint.key)) localTotal += s.weight;
      else remoteTotal += s.weight;
    }
    const out = this.zone.outOfZoneShare;
    const total = localTotal + remoteTotal;
    const localScale = ((1 - out) * total) / localTotal;
    const remoteScale = (out * total) / remoteTotal;
    const result: ShapedEndpoint[] = [];
    for (const s of shaped) {
      const weight = s.weight * (this.zone.isLocal(s.endpoint.key) ? localScale : remoteScale);
      if (weight > 0) result.push({ ...s, weight });
    }
    return result;
  }

  /**
   * Each endpoint's pushback multiplier now, or undefined when none is inside its window (or
   * the penalty is off); refreshes until when the plan keeps moving for it.
   */
  #pushbackPenalties(kept: readonly Endpoint[], loads: LoadTracker, now: number): Float64Array | undefined {
    const o = this.options.pushback;
    if (o === false || !this.options.shapesPushback || !(now < this.#pushbackUntilMs)) return undefined;
    let out: Float64Array | undefined;
    let until = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < kept.length; i++) {
      const at = loads.peek((kept[i] as Endpoint).key)?.reported('pushbackAtMs') ?? Number.NaN;
      if (!(now - at < o.windowMs)) continue;
      out ??= new Float64Array(kept.length).fill(1);
      out[i] = pushbackMultiplier(now - at, o);
      until = Math.max(until, at + o.windowMs);
    }
    this.#pushbackUntilMs = until;
    return out;
  }

  /** The policy's reported-weight multipliers for `kept`, recomputed at most every update period. */
  #reportedMultipliers(kept: readonly Endpoint[], loads: LoadTracker, now: number): Float64Array | undefined {
    const source = this.options.reportedWeights;
    if (source === undefined) return undefined;
    if (this.#reportedFor !== kept || !(now - this.#reportedAtMs < source.updatePeriodMs)) {
      const out = new Float64Array(kept.length);
      source.multipliers(kept, loads, now, out);
      this.#reported = out;
      this.#reportedFor = kept;
      this.#reportedAtMs = now;
    }
    return this.#reported;
  }

  zoneState(): ZoneRoutingState {
    return this.zone.state();
  }
}
