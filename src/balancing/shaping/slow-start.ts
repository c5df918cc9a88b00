/**
 * Slow start: a newly ready endpoint (or one back from outlier ejection) takes a growing
 * share of picks over a window instead of its full share at once — for pods that warm up
 * (JIT, caches, connection pools). Envoy's definition: the endpoint's weight is multiplied by
 * `max(minWeightPercent / 100, timeFactor ^ (1 / aggression))` with
 * `timeFactor = max(elapsedMs, 1) / windowMs`, until `windowMs` has passed. Aggression 1 ramps
 * linearly; above 1 the weight rises faster early, below 1 slower.
 */
import { opt, type Parsed, parseOptions } from '../../core/options.js';

export const slowStartSpec = {
  /** Ramp length in ms from the moment an endpoint becomes ready; 0 (default) = off. */
  windowMs: opt.number({ min: 0, default: 0 }),
  /** Curve exponent's inverse (Envoy's `aggression`); default 1 (linear). */
  aggression: opt.number({ min: 0, exclusiveMin: true, default: 1 }),
  /** Weight floor during the ramp, percent of the endpoint's weight; default 10 (Envoy's). */
  minWeightPercent: opt.number({ min: 0, max: 100, default: 10 }),
};

export type SlowStartOptions = Parsed<typeof slowStartSpec>;

/**
 * Validates slow-start options (unknown keys rejected).
 *
 * @example
 * parseSlowStartOptions({ windowMs: 20_000 }) // → { windowMs: 20000, aggression: 1, minWeightPercent: 10 }
 */
export function parseSlowStartOptions(input: unknown, component = 'slow start'): SlowStartOptions {
  return parseOptions(component, input, slowStartSpec);
}

/**
 * The multiplier on an endpoint's weight `elapsedMs` after it became ready: in
 * [minWeightPercent / 100, 1], exactly 1 from `windowMs` on (and always when slow start is off).
 *
 * @example
 * slowStartFactor(5_000, { windowMs: 20_000, aggression: 1, minWeightPercent: 10 }) // → 0.25
 */
export function slowStartFactor(elapsedMs: number, o: SlowStartOptions): number {
  if (o.windowMs <= 0 || elapsedMs >= o.windowMs) return 1;
  const time = Math.max(elapsedMs, 1) / o.windowMs;
  const curve = o.aggression === 1 ? time : time ** (1 / o.aggression);
  return Math.min(1, Math.max(o.minWeightPercent / 100, curve));
}
