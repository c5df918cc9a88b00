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
 * - The heaviest connections go first, but only one whose load is below twice the remaining
 *   excess (closing it brings the pod closer to the mean rather than past it); at most
 *   `maxShedFraction` of the connections per period (the churn budget; at least one).
 * - After shedding, `cooldownMs` passes before the next decision, so the load window shows
 *   the effect and clients have re-dialled elsewhere.
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
    if (n === 0) {
      this.#shedding = false;
      return hold('no-peers', undefined, undefined);
    }
    let sum = input.ownLoad;
    for (const l of input.peerLoads) sum += l;
    const mean = sum / (n + 1);
    const share = mean > 0 ? input.ownLoad / mean : input.ownLoad > 0 ? Number.POSITIVE_INFINITY : 1;
    if (input.nowMs - this.#readySinceMs < o.warmupMs) return hold('warm-up', mean, share);
    if (input.nowMs < this.#cooldownUntilMs) return hold('cooldown', mean, share);
    const start = 1 + o.tolerance;
    const stop = 1 + o.tolerance * o.stopFraction;
    if (share <= 1 || share <= stop) this.#shedding = false;
    else if (share > start) this.#shedding = true;
    if (!this.#shedding) return hold('within-share', mean, share);

    const picked = pickConnections(input.connectionLoads, input.ownLoad - mean, o.maxShedFraction);
    if (picked.length === 0) return hold('no-fit', mean, share);
    this.#cooldownUntilMs = input.nowMs + o.cooldownMs;
    return { type: 'shed', connections: picked, meanLoad: mean, share };
  }
}

function hold(reason: FairShareHoldReason, meanLoad: number | undefined, share: number | undefined): FairShareDecision {
  return { type: 'hold', reason, meanLoad, share };
}

/**
 * Heaviest first, each only while it brings the pod closer to the mean (load < 2 × remaining
 * excess), at most `maxFraction` of the connections (at least one).
 */
function pickConnections(loads: readonly number[], excess: number, maxFraction: number): number[] {
  const budget = Math.max(1, Math.floor(maxFraction * loads.length));
  const order = loads.map((_, i) => i).sort((a, b) => (loads[b] as number) - (loads[a] as number) || a - b);
  const picked: number[] = [];
  let remaining = excess;
  for (const i of order) {
    if (picked.length >= budget || remaining <= 0) break;
    const load = loads[i] as number;
    if (load <= 0 || load >= 2 * remaining) continue;
    picked.push(i);
    remaining -= load;
  }
  return picked;
}

/** The next period's length: `periodMs` jittered uniformly by ±`jitter`. */
export function nextFairSharePeriodMs(options: ResolvedFairShareDecision, random: Random): number {
  return options.periodMs * (1 - options.jitter + 2 * options.jitter * random.next());
}
