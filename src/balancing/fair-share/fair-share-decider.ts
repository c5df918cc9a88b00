/**
 * The fair-share decision, pure: given this pod's load, the loads its peers last reported and
 * the load each of its connections carries, which connections (if any) should it close now?
 * The server recycler, the proxy's listeners and the simulator all call this one function, so
 * what the simulator predicts is what the servers do.
 *
 * Rules (each a contract the tests check):
 * - No fresh peer answer → hold (`no-peers`): without a fleet view, shedding is a guess.
 * - Warm-up: a pod ready for less than `warmupMs` never sheds.
 * - Own load at or below the estimated fleet mean never sheds. Shedding starts above
 *   mean × (1 + tolerance) and, once started, goes on until own load ≤ mean × (1 + tolerance ×
 *   stopFraction) (hysteresis).
 * - Filling: while a sampled peer is below mean × (1 − tolerance) (a pod just added, or one
 *   that lost its connections), the fleet is not balanced even if nobody is above mean +
 *   tolerance: a pod above the mean sheds too. A re-dialled connection lands on a random pod,
 *   so only a few of the closed ones reach the pod below; a filling pod therefore may close up
 *   to twice its excess, ending at most as far below the mean as it was above (never farther
 *   from the mean than before; what it sheds mostly comes back to it and its peers).
 * - The heaviest connections go first, but only one whose load is below twice the remaining
 *   excess (closing it brings the pod closer to the mean rather than past it; when filling, the
 *   total closed stays within twice the excess); at most `maxShedFraction` of the connections
 *   per period (the churn budget; at least one).
 * - After shedding, `cooldownMs` passes before the next decision. With a windowed load
 *   (requests per second, in-flight), until the window has moved past a shed (`windowMs`) the
 *   load of the connections it closed is taken off the pod's measured load, so a cooldown
 *   shorter than the window does not shed the same excess twice. The `connections` load is a
 *   count taken now, without a window: a retiring connection is no longer in it (the callers
 *   count only open, non-retiring connections), so nothing is taken off — doing so would count
 *   every shed twice and hold a pod below its real load for a whole window after each shed.
 */
import type { Random } from '../../core/random.js';
import type { ResolvedFairShareDecision } from './fair-share-options.js';

/** Why a decision closed nothing. */
export type FairShareHoldReason = 'warm-up' | 'no-peers' | 'cooldown' | 'within-share' | 'no-fit';

export interface FairShareInput {
  /** Clock ms. */
  readonly nowMs: number;
  /** This pod's load, in the unit of `loadMetric`. */
  readonly ownLoad: number;
  /** The peers' loads that are fresh (younger than `peerTtlMs`), same unit. */
  readonly peerLoads: readonly number[];
  /** Load carried by each open, non-retiring connection (same unit); indices are returned. */
  readonly connectionLoads: readonly number[];
}

export type FairShareDecision =
  | {
      readonly type: 'hold';
      readonly reason: FairShareHoldReason;
      /** Estimated fleet mean; undefined without a peer answer. */
      readonly meanLoad: number | undefined;
      /** Own load / mean (1 = exactly the fair share); undefined without a mean. */
      readonly share: number | undefined;
    }
  | {
      readonly type: 'shed';
      /** Indices into `connectionLoads`, heaviest first. */
      readonly connections: readonly number[];
      readonly meanLoad: number;
      readonly share: number;
    };

export class FairShareDecider {
  readonly options: ResolvedFairShareDecision;
  #readySinceMs: number;
  #shedding = false;
  #cooldownUntilMs = Number.NEGATIVE_INFINITY;
  /** Sheds a windowed load has not fully seen yet: their load, and when the window will have. */
  #pending: { load: number; untilMs: number }[] = [];

  /** `readySinceMs`: when the pod became ready (the warm-up counts from there). */
  constructor(options: ResolvedFairShareDecision, readySinceMs: number) {
    this.options = options;
    this.#readySinceMs = readySinceMs;
  }

  /** True while the hysteresis keeps the pod shedding. */
  get shedding(): boolean {
    return this.#shedding;
  }

  /** The pod became ready (again) at `nowMs`: the warm-up restarts. */
  markReady(nowMs: number): void {
    this.#readySinceMs = nowMs;
    this.#shedding = false;
  }

  /** One decision; call it once per period. */
  decide(input: FairShareInput): FairShareDecision {
    const o = this.options;
    const n = input.peerLoads.length;
    this.#pending = this.#pending.filter((p) => p.untilMs > input.nowMs);
    let ownLoad = input.ownLoad;
    for (const p of this.#pending) ownLoad -= p.load;
    ownLoad = Math.max(0, ownLoad);
    if (n === 0) {
      this.#shedding = false;
      return hold('no-peers', undefined, undefined);
    }
    let sum = ownLoad;
    for (const l of input.peerLoads) sum += l;
    const mean = sum / (n + 1);
    const share = mean > 0 ? ownLoad / mean : ownLoad > 0 ? Number.POSITIVE_INFINITY : 1;
    if (input.nowMs - this.#readySinceMs < o.warmupMs) return hold('warm-up', mean, share);
    if (input.nowMs < this.#cooldownUntilMs) return hold('cooldown', mean, share);
    const start = 1 + o.tolerance;
    const stop = 1 + o.tolerance * o.stopFraction;
    if (share <= 1 || share <= stop) this.#shedding = false;
    else if (share > start) this.#shedding = true;
    const floor = mean * (1 - o.tolerance);
    const filling = share > 1 && input.peerLoads.some((l) => l < floor);
    if (!this.#shedding && !filling) return hold('within-share', mean, share);

    const picked = pickConnections(input.connectionLoads, ownLoad - mean, o.maxShedFraction, filling);
    if (picked.length === 0) return hold('no-fit', mean, share);
    this.#cooldownUntilMs = input.nowMs + o.cooldownMs;
    let shedLoad = 0;
    for (const i of picked) shedLoad += input.connectionLoads[i] as number;
    if (o.loadMetric !== 'connections') this.#pending.push({ load: shedLoad, untilMs: input.nowMs + o.windowMs });
    return { type: 'shed', connections: picked, meanLoad: mean, share };
  }
}

function hold(reason: FairShareHoldReason, meanLoad: number | undefined, share: number | undefined): FairShareDecision {
  return { type: 'hold', reason, meanLoad, share };
}

/**
 * Heaviest first, at most `maxFraction` of the connections (at least one). Normally each only
 * while it brings the pod closer to the mean (load < 2 × remaining excess); when `filling`,
 * while the total closed stays within twice the excess (the pod ends no farther from the mean).
 */
function pickConnections(loads: readonly number[], excess: number, maxFraction: number, filling: boolean): number[] {
  const budget = Math.max(1, Math.floor(maxFraction * loads.length));
  const order = loads.map((_, i) => i).sort((a, b) => (loads[b] as number) - (loads[a] as number) || a - b);
  const picked: number[] = [];
  let remaining = excess;
  for (const i of order) {
    if (picked.length >= budget || (!filling && remaining <= 0)) break;
    const load = loads[i] as number;
    if (load <= 0) continue;
    if (filling ? load > remaining + excess : load >= 2 * remaining) continue;
    picked.push(i);
    remaining -= load;
  }
  return picked;
}

/** The next period's length: `periodMs` jittered uniformly by ±`jitter`. */
export function nextFairSharePeriodMs(options: ResolvedFairShareDecision, random: Random): number {
  return options.periodMs * (1 - options.jitter + 2 * options.jitter * random.next());
}
