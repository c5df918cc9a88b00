import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../core/random.js';
import { meanSpeed, type SpeedDistributionSpec, speedSampler } from './speed-distribution.js';

describe('speedSampler', () => {
  const cases: { spec: SpeedDistributionSpec; min: number; max: number }[] = [
    { spec: { type: 'uniform', min: 0.5, max: 1.5 }, min: 0.5, max: 1.5 },
    { spec: { type: 'lognormal', mean: 1, sigma: 0.25 }, min: 0, max: Number.POSITIVE_INFINITY },
    { spec: { type: 'lognormal', mean: 2, sigma: 1 }, min: 0, max: Number.POSITIVE_INFINITY },
  ];
  for (const { spec, min, max } of cases) {
    it(`${JSON.stringify(spec)}: speeds > 0 within bounds, sample mean within 2% of meanSpeed`, () => {
      const draw = speedSampler(spec);
      const r = new SeededRandom(9);
      let sum = 0;
      let outside = 0;
      const n = 100_000;
      for (let i = 0; i < n; i++) {
        const v = draw(r);
        if (!(v > 0 && v >= min && v < max)) outside++;
        sum += v;
      }
      expect(outside).toBe(0);
      expect(Math.abs(sum / n / meanSpeed(spec) - 1)).toBeLessThan(0.02);
    });
  }
});
