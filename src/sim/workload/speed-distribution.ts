/**
 * Pod capacity factors drawn at random: a pod's speed relative to a pod of speed 1 (0.5 serves
 * at half the rate), one draw per pod as it is created, for fleets on mixed or noisy machines
 * where the scenario does not name every pod's speed. `uniform` spreads speeds evenly between
 * two bounds; `lognormal` gives most pods a speed near the mean and a few much slower or faster
 * ones (log-space standard deviation `sigma`). Both are described by their mean so a scenario's
 * offered load can be stated against the fleet's expected capacity. A sampler draws from an
 * injected `Random` and allocates nothing.
 */
import { opt } from '../../core/options.js';
import type { Random } from '../../core/random.js';
import { type VariantOf, variant } from '../scenario/spec-fields.js';
import { normalDraw } from './distribution.js';

/** The schema of `pods.speedDistribution`. */
export const speedDistributionSpecs = {
  uniform: {
    type: opt.oneOf(['uniform']),
    min: opt.number({ min: 0, exclusiveMin: true }),
    max: opt.number({ min: 0, exclusiveMin: true }),
  },
  lognormal: {
    type: opt.oneOf(['lognormal']),
    mean: opt.number({ min: 0, exclusiveMin: true, default: 1 }),
    sigma: opt.number({ min: 0, default: 0.25 }),
  },
};

export type SpeedDistributionSpec = VariantOf<typeof speedDistributionSpecs>;

/** A speed distribution field for a scenario schema. */
export function speedDistributionField() {
  return variant(speedDistributionSpecs, { optional: true });
}

/** The expected speed of a pod drawn from `spec`. */
export function meanSpeed(spec: SpeedDistributionSpec): number {
  return spec.type === 'uniform' ? (spec.min + spec.max) / 2 : spec.mean;
}

/**
 * Draws pod speeds from `spec` (always > 0).
 *
 * @example
 * const draw = speedSampler({ type: 'uniform', min: 0.5, max: 1.5 });
 * draw(new SeededRandom(1)); // in [0.5, 1.5)
 */
export function speedSampler(spec: SpeedDistributionSpec): (random: Random) => number {
  if (spec.type === 'uniform') {
    const { min, max } = spec;
    if (max < min) throw new RangeError(`uniform speed distribution: max ${max} < min ${min}`);
    return (r) => min + (max - min) * r.next();
  }
  const { mean, sigma } = spec;
  const mu = Math.log(mean) - (sigma * sigma) / 2;
  return (r) => Math.exp(normalDraw(r, mu, sigma));
}

/**
 * The speed of each pod as it is created, by creation index: `speeds` cycled when given, else
 * a draw from `distribution` (from `random`, in creation order), else 1.
 *
 * @example
 * const speedOf = podSpeeds([1, 0.5], undefined, random);
 * speedOf(0); // 1
 * speedOf(3); // 0.5
 */
export function podSpeeds(
  speeds: readonly number[],
  distribution: SpeedDistributionSpec | undefined,
  random: Random,
): (index: number) => number {
  if (speeds.length > 0) return (index) => speeds[index % speeds.length] as number;
  if (distribution === undefined) return () => 1;
  const draw = speedSampler(distribution);
  return () => draw(random);
}
