/**
 * The herding guard for load-signal policies (`least-request`, `peak-ewma`). A new endpoint
 * (or one back from ejection) has nothing in flight and, to peak-EWMA, no latency history, so
 * it wins every comparison it takes part in, in every balancer at once. Two remedies, on by
 * default:
 *
 * - **Latency seed**: an endpoint with no response yet starts from the median latency estimate
 *   of the endpoints that have one, not from `defaultRttMs` (which may look far cheaper, or
 *   far dearer, than the fleet really is).
 * - **Share cap**: while its history builds — until this balancer has seen `minResponses`
 *   responses from it, or it carries as many requests in flight as the median endpoint (then
 *   it no longer looks free) — the endpoint's draw weight is lowered so that even if it won every
 *   comparison its share of picks would stay at or below `maxShareMultiple` × its fair share.
 *   An endpoint picked by a d-choice policy is first drawn as a candidate, so its share is at
 *   most its chance to be drawn: `guardDrawWeight` solves for the weight where that chance
 *   equals the cap.
 */

import { opt, type Parsed, parseOptions } from '../../core/options.js';
import type { EndpointLoad } from '../endpoint-load.js';

export const herdingGuardSpec = {
  /** Largest share of picks a guarded endpoint may take, as a multiple of its fair share; default 1.5. */
  maxShareMultiple: opt.number({ min: 1, default: 1.5 }),
  /** Responses this balancer must see from an endpoint before its guard lifts; default 10. */
  minResponses: opt.int({ min: 1, default: 10 }),
  /** Seed a history-less endpoint's latency estimate with the fleet median; default true. */
  seedLatency: opt.boolean({ default: true }),
};

export type HerdingGuardOptions = Parsed<typeof herdingGuardSpec>;

/**
 * Validates herding-guard options: `false` switches the guard off; `undefined` or an object
 * gives the (defaulted) options.
 *
 * @example
 * parseHerdingGuardOptions(undefined) // → { maxShareMultiple: 1.5, minResponses: 10, seedLatency: true }
 * parseHerdingGuardOptions(false)     // → false
 */
export function parseHerdingGuardOptions(input: unknown, component = 'herding guard'): HerdingGuardOptions | false {
  if (input === false) return false;
  return parseOptions(component, input, herdingGuardSpec);
}

/** Responses (successes and errors) an endpoint's load record has seen. */
export function responsesOf(load: EndpointLoad): number {
  return load.successes + load.errors;
}

/**
 * The chance that one endpoint of draw weight `g` is among `d` distinct weighted candidates,
 * when `guarded` endpoints (itself included) weigh `g` and `others` weigh 1. Exact for d ≤ 2
 * (draws without replacement), and `1 - (1 - p)^d` beyond (a slight over-estimate).
 */
function drawChance(g: number, guarded: number, others: number, d: number): number {
  const total = others + guarded * g;
  const p = g / total;
  if (d <= 1) return p;
  if (d === 2) {
    // First draw is this endpoint, or another one (a guarded one or an unguarded one) and then this.
    const afterOther = others / total / (1 - 1 / total);
    const afterGuarded = guarded > 1 ? ((guarded - 1) * g) / total / (1 - g / total) : 0;
    return p + p * (afterOther + afterGuarded);
  }
  return 1 - (1 - p) ** d;
}

/**
 * The draw-weight multiplier (0, 1] for guarded endpoints such that one of them, winning every
 * comparison, gets at most `maxShareMultiple / n` of the picks (n = `guarded + others`).
 *
 * @example
 * guardDrawWeight(1.5, 2, 1, 19) // ≈ 0.74: with P2C a lone new endpoint among 20 is drawn in 2/20 of picks at weight 1
 */
export function guardDrawWeight(maxShareMultiple: number, d: number, guarded: number, others: number): number {
  const n = guarded + others;
  const cap = maxShareMultiple / n;
  if (others === 0 || d <= 1 || drawChance(1, guarded, others, d) <= cap) return 1;
  // With so few endpoints that every pick draws a guarded one whatever its weight (d >= n, say),
  // a lower draw weight bounds nothing and would only starve it on ties: leave it at 1.
  if (drawChance(MIN_DRAW_WEIGHT, guarded, others, d) > cap) return 1;
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 30; i++) {
    const mid = (lo + hi) / 2;
    if (drawChance(mid, guarded, others, d) <= cap) lo = mid;
    else hi = mid;
  }
  return Math.max(lo, MIN_DRAW_WEIGHT);
}

/**
 * The lowest draw weight the guard hands out: low enough to bound a herd, high enough that a
 * guarded endpoint still wins ties (idle, sequential traffic) now and then, gets its first
 * responses and leaves the guard — never starved.
 */
const MIN_DRAW_WEIGHT = 0.05;

/** The median latency estimate (ms) of records that have seen a response, or undefined. */
export function medianLatencyMs(loads: Iterable<EndpointLoad>): number | undefined {
  const values: number[] = [];
  for (const l of loads) if (responsesOf(l) > 0) values.push(l.estimateMs);
  if (values.length === 0) return undefined;
  values.sort((a, b) => a - b);
  const mid = values.length >> 1;
  return values.length % 2 === 1
    ? (values[mid] as number)
    : ((values[mid - 1] as number) + (values[mid] as number)) / 2;
}
