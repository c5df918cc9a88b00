/**
 * Random durations for the simulator's workloads: service times, connection lifetimes,
 * think times, reconnect delays. Every distribution is described by its mean in ms (plus a
 * shape where it has one), so scenarios compare like with like: `pareto` and `lognormal` are
 * the heavy-tailed ones (a few very long values carry much of the total). A `Sampler` draws
 * from an injected `Random` and allocates nothing.
 */
import { opt } from '../../core/options.js';
import type { Random } from '../../core/random.js';
import { type VariantOf, variant } from '../scenario/spec-fields.js';

/** The schema of a distribution in scenario files. */
export const distributionSpecs = {
  fixed: { type: opt.oneOf(['fixed']), valueMs: opt.number({ min: 0 }) },
  exponential: { type: opt.oneOf(['exponential']), meanMs: opt.number({ min: 0, exclusiveMin: true }) },
  uniform: { type: opt.oneOf(['uniform']), minMs: opt.number({ min: 0 }), maxMs: opt.number({ min: 0 }) },
  /** Pareto with tail index `shape` (> 1 for a finite mean; 1.1–1.5 is very heavy). */
  pareto: {
    type: opt.oneOf(['pareto']),
    meanMs: opt.number({ min: 0, exclusiveMin: true }),
    shape: opt.number({ min: 1, exclusiveMin: true, default: 1.5 }),
  },
  /** Log-normal with log-space standard deviation `sigma` (2 is very heavy). */
  lognormal: {
    type: opt.oneOf(['lognormal']),
    meanMs: opt.number({ min: 0, exclusiveMin: true }),
    sigma: opt.number({ min: 0, default: 1 }),
  },
};

export type DistributionSpec = VariantOf<typeof distributionSpecs>;

/** A distribution field for a scenario schema. */
export function distributionField<C extends { optional?: boolean; default?: DistributionSpec }>(c: C = {} as C) {
  return variant(distributionSpecs, c);
}

/**
 * One draw from a normal distribution of mean `mu` and standard deviation `sigma` (Box–Muller;
 * one normal per pair of uniforms keeps the stream position simple: two draws per call).
 */
export function normalDraw(r: Random, mu: number, sigma: number): number {
  const u = 1 - r.next();
  const v = r.next();
  return mu + sigma * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** Draws durations (ms). */
export interface Sampler {
  readonly meanMs: number;
  sample(random: Random): number;
}

/**
 * A sampler for `spec`.
 *
 * @example
 * const s = createSampler({ type: 'exponential', meanMs: 5 });
 * s.sample(new SeededRandom(1)); // ≈ 5 on average
 */
export function createSampler(spec: DistributionSpec): Sampler {
  switch (spec.type) {
    case 'fixed': {
      const v = spec.valueMs;
      return { meanMs: v, sample: () => v };
    }
    case 'exponential': {
      const mean = spec.meanMs;
      return { meanMs: mean, sample: (r) => -mean * Math.log(1 - r.next()) };
    }
    case 'uniform': {
      const { minMs, maxMs } = spec;
      if (maxMs < minMs) throw new RangeError(`uniform distribution: maxMs ${maxMs} < minMs ${minMs}`);
      const span = maxMs - minMs;
      return { meanMs: (minMs + maxMs) / 2, sample: (r) => minMs + span * r.next() };
    }
    case 'pareto': {
      const { meanMs, shape } = spec;
      const scale = (meanMs * (shape - 1)) / shape;
      const inv = -1 / shape;
      // Inverse CDF: scale · U^(-1/shape), U in (0, 1].
      return { meanMs, sample: (r) => scale * (1 - r.next()) ** inv };
    }
    case 'lognormal': {
      const { meanMs, sigma } = spec;
      const mu = Math.log(meanMs) - (sigma * sigma) / 2;
      return {
        meanMs,
        sample: (r) => Math.exp(normalDraw(r, mu, sigma)),
      };
    }
  }
}
