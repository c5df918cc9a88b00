import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../core/random.js';
import { createSampler, type DistributionSpec } from './distribution.js';

describe('createSampler', () => {
  const cases: { spec: DistributionSpec; tolerance: number }[] = [
    { spec: { type: 'fixed', valueMs: 7 }, tolerance: 0 },
    { spec: { type: 'exponential', meanMs: 5 }, tolerance: 0.02 },
    { spec: { type: 'uniform', minMs: 2, maxMs: 10 }, tolerance: 0.01 },
    // Heavy tails converge slowly; the tolerance is wider but the mean must still hold.
    { spec: { type: 'pareto', meanMs: 100, shape: 2.5 }, tolerance: 0.05 },
    { spec: { type: 'lognormal', meanMs: 100, sigma: 1 }, tolerance: 0.05 },
  ];
  for (const { spec, tolerance } of cases) {
    it(`${spec.type}: sample mean within ${tolerance * 100}% of meanMs`, () => {
      const sampler = createSampler(spec);
      const r = new SeededRandom(3);
      let sum = 0;
      let negative = 0;
      const n = 200_000;
      for (let i = 0; i < n; i++) {
        const v = sampler.sample(r);
        if (v < 0) negative++;
        sum += v;
      }
      expect(negative).toBe(0);
      expect(Math.abs(sum / n / sampler.meanMs - 1)).toBeLessThanOrEqual(tolerance);
    });
  }

  it('lognormal median is exp(mu)', () => {
    const sampler = createSampler({ type: 'lognormal', meanMs: 30, sigma: 2 });
    const r = new SeededRandom(4);
    const values = Array.from({ length: 50_001 }, () => sampler.sample(r)).sort((a, b) => a - b);
    const median = values[25_000] as number;
    expect(median / (30 * Math.exp(-2))).toBeGreaterThan(0.95);
    expect(median / (30 * Math.exp(-2))).toBeLessThan(1.05);
  });
});
