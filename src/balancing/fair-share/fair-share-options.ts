/**
 * Options of fair-share shedding, declared once and shared by every component that sheds: the
 * server recycler (`recycleConnections(server, { fairShare })`), the proxy's listeners
 * (`listeners[].recycle.fairShare`) and the simulator (`--server-fair-share`). Units are in the
 * names; defaults suit a Service of a few to a few thousand pods.
 */
import { opt, type Parsed, parseOptions } from '../../core/options.js';

/** What "load" means when pods compare themselves with the fleet. */
export const FAIR_SHARE_LOAD_METRICS = ['requests-per-second', 'in-flight', 'connections'] as const;
export type FairShareLoadMetric = (typeof FAIR_SHARE_LOAD_METRICS)[number];

/** The decision part, shared by the server, the proxy and the simulator. */
export const fairShareDecisionSpec = {
  /** Shed only while own load > estimated fleet mean × (1 + tolerance). Default 0.10. */
  tolerance: opt.number({ min: 0, max: 10, default: 0.1 }),
  /**
   * Hysteresis: once shedding, continue until own load ≤ mean × (1 + tolerance × stopFraction).
   * 0..1, default 0.5 (stop at +5% with the default tolerance). Never sheds at or below the mean.
   */
  stopFraction: opt.number({ min: 0, max: 1, default: 0.5 }),
  /** Decision period (and peer sampling period), ms, jittered by `jitter`. Default 1000. */
  periodMs: opt.number({ min: 10, default: 1000 }),
  /** Jitter fraction of each period, 0..0.5 (default 0.2), so pods do not act in lockstep. */
  jitter: opt.number({ min: 0, max: 0.5, default: 0.2 }),
  /** Window the load is measured over, ms (requests per second, average in-flight). Default 2000. */
  windowMs: opt.number({ min: 10, default: 2000 }),
  loadMetric: opt.oneOf(FAIR_SHARE_LOAD_METRICS, { default: 'requests-per-second' }),
  /** A pod that became ready less than this ago never sheds (its window is not full). Default 2 × windowMs. */
  warmupMs: opt.number({ min: 0, optional: true }),
  /**
   * Churn budget: at most this fraction of the open connections is shed per period (at least
   * one connection). Default 0.25.
   */
  maxShedFraction: opt.number({ min: 0, max: 1, exclusiveMin: true, default: 0.25 }),
  /**
   * After shedding, the next decision waits this long (ms) so the window sees the effect and
   * clients have re-dialled. Default: windowMs.
   */
  cooldownMs: opt.number({ min: 0, optional: true }),
  /** Peers asked per period; the cost per pod is independent of the fleet size. Default 3. */
  peersPerPeriod: opt.int({ min: 1, max: 100, default: 3 }),
  /** A peer's answer counts toward the mean for this long, ms. Default 10 × periodMs. */
  peerTtlMs: opt.number({ min: 0, exclusiveMin: true, optional: true }),
};

export type FairShareDecisionOptions = Parsed<typeof fairShareDecisionSpec>;

/** The decision options with every default resolved. */
export interface ResolvedFairShareDecision extends FairShareDecisionOptions {
  readonly warmupMs: number;
  readonly cooldownMs: number;
  readonly peerTtlMs: number;
}

/** Fills the derived defaults (`warmupMs`, `cooldownMs`, `peerTtlMs`). */
export function resolveFairShareDecision(o: FairShareDecisionOptions): ResolvedFairShareDecision {
  return Object.freeze({
    ...o,
    warmupMs: o.warmupMs ?? 2 * o.windowMs,
    cooldownMs: o.cooldownMs ?? o.windowMs,
    peerTtlMs: o.peerTtlMs ?? 10 * o.periodMs,
  });
}

/**
 * Validates the decision options for `component` (errors name the field).
 *
 * @example
 * parseFairShareDecision('sim', { tolerance: 0.2 }).tolerance; // 0.2
 */
export function parseFairShareDecision(component: string, input: unknown): ResolvedFairShareDecision {
  return resolveFairShareDecision(parseOptions(component, input, fairShareDecisionSpec));
}
