import { describe, expect, it } from 'vitest';
import { imbalance } from './imbalance.js';

describe('imbalance', () => {
  const cases: { values: number[]; maxOverMean: number; cov: number; jain: number }[] = [
    { values: [], maxOverMean: 1, cov: 0, jain: 1 },
    { values: [0, 0, 0], maxOverMean: 1, cov: 0, jain: 1 },
    { values: [5, 5, 5, 5], maxOverMean: 1, cov: 0, jain: 1 },
    { values: [10, 10, 10, 30], maxOverMean: 2, cov: Math.sqrt(75) / 15, jain: 0.75 },
    { values: [1, 0, 0, 0], maxOverMean: 4, cov: Math.sqrt(3), jain: 0.25 },
  ];
  for (const c of cases) {
    it(`[${c.values.join(', ')}]`, () => {
      const r = imbalance(c.values);
      expect(r.maxOverMean).toBeCloseTo(c.maxOverMean, 9);
      expect(r.cov).toBeCloseTo(c.cov, 9);
      expect(r.jain).toBeCloseTo(c.jain, 9);
    });
  }
});
