/**
 * The pushback penalty: an endpoint that answered 429, 503 or gRPC RESOURCE_EXHAUSTED (the
 * transport calls `EndpointLoad.pushback()`) is telling its callers it is full, so the
 * `Balancer` lowers its weight for a while — by `factor` right after the latest pushback,
 * fading linearly back to its full weight over `windowMs`. While the endpoint keeps pushing
 * back the penalty stays near `factor`; once it stops, its share is back to fair within
 * `windowMs`. This is a bias, not a removal: outlier ejection (consecutive errors) takes an
 * endpoint out of rotation, the penalty only sends it less, so an endpoint that sheds a little
 * load still serves the rest.
 *
 * How policies feel it: weight-following policies (`random`, `weighted-round-robin`,
 * `report-weighted`) pick it less in proportion; `least-request`, `peak-ewma` and `prequal`
 * both draw it less and compare its load per unit of (lowered) weight, so it also loses
 * comparisons; `round-robin` skips its turn with probability 1 − 1/penalty. Hash policies are
 * not biased: moving a key's endpoint would break the affinity they exist for.
 */
import { opt, type Parsed, parseOptions } from '../../core/options.js';

export const pushbackSpec = {
  /** How long after its latest pushback an endpoint is penalised, ms; the penalty fades linearly over it. Default 5,000. */
  windowMs: opt.number({ min: 0, exclusiveMin: true, default: 5_000 }),
  /** How many times less weight an endpoint has right after pushing back; default 10 (1 = no penalty). */
  factor: opt.number({ min: 1, default: 10 }),
};

export type PushbackOptions = Parsed<typeof pushbackSpec>;

/**
 * Validates pushback-penalty options: `false` switches the penalty off; `undefined` or an
 * object gives the (defaulted) options.
 *
 * @example
 * parsePushbackOptions(undefined)          // → { windowMs: 5000, factor: 10 }
 * parsePushbackOptions({ windowMs: 2000 }) // → { windowMs: 2000, factor: 10 }
 * parsePushbackOptions(false)              // → false
 */
export function parsePushbackOptions(input: unknown, component = 'pushback'): PushbackOptions | false {
  if (input === false) return false;
  return parseOptions(component, input, pushbackSpec);
}

/**
 * The multiplier on an endpoint's weight `sinceMs` after its latest pushback: `1 / factor` at
 * once, rising to exactly 1 at `windowMs` (and 1 for NaN: never pushed back).
 *
 * @example
 * pushbackMultiplier(0, { windowMs: 5000, factor: 10 })    // → 0.1
 * pushbackMultiplier(2500, { windowMs: 5000, factor: 10 }) // → 1 / 5.5
 * pushbackMultiplier(5000, { windowMs: 5000, factor: 10 }) // → 1
 */
export function pushbackMultiplier(sinceMs: number, o: PushbackOptions): number {
  if (!(sinceMs < o.windowMs)) return 1;
  const left = 1 - Math.max(0, sinceMs) / o.windowMs;
  return 1 / (1 + (o.factor - 1) * left);
}
