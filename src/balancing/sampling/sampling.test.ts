import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../core/random.js';
import { AliasTable } from './alias-table.js';
import { CandidateDraw } from './candidate-draw.js';
import { mix32, mix32With } from './mix32.js';

describe('AliasTable', () => {
  const cases: { weights: number[] }[] = [
    { weights: [1] },
    { weights: [1, 1, 1, 1] },
    { weights: [1, 2, 3, 4] },
    { weights: [0.001, 1, 10, 100] },
    { weights: [5, 0.5, 5, 0.5, 5] },
  ];
  it.each(cases)('samples weights $weights in proportion (±3% of each share, 200,000 draws)', ({ weights }) => {
    const table = new AliasTable(weights);
    const random = new SeededRandom(7);
    const counts = new Array<number>(weights.length).fill(0);
    const draws = 200_000;
    for (let i = 0; i < draws; i++) counts[table.sample(random)]!++;
    const total = weights.reduce((a, b) => a + b, 0);
    weights.forEach((w, i) => {
      const expected = (draws * w) / total;
      // Shares below 1,000 draws are checked in absolute terms (binomial noise dominates).
      if (expected < 1000) expect(Math.abs(counts[i]! - expected)).toBeLessThan(4 * Math.sqrt(expected) + 1);
      else expect(Math.abs(counts[i]! / expected - 1)).toBeLessThan(0.03);
    });
  });

  it('rejects an empty weight list', () => {
    expect(() => new AliasTable([])).toThrow(RangeError);
  });
});

describe('CandidateDraw', () => {
  it.each([
    { n: 2, d: 2 },
    { n: 5, d: 3 },
    { n: 5, d: 5 },
    { n: 1000, d: 8 },
  ])('draws $d distinct indices of $n, each position uniform', ({ n, d }) => {
    const draw = new CandidateDraw(n, new SeededRandom(1));
    const firstCounts = new Array<number>(n).fill(0);
    const picks = 20_000;
    for (let p = 0; p < picks; p++) {
      draw.begin();
      const seen = new Set<number>();
      for (let k = 0; k < d; k++) {
        const i = draw.next();
        expect(i).toBeGreaterThanOrEqual(0);
        expect(i).toBeLessThan(n);
        seen.add(i);
        if (k === d - 1 && n <= 5) firstCounts[i]!++;
      }
      expect(seen.size).toBe(d);
    }
    if (n <= 5) for (const c of firstCounts) expect(Math.abs(c / (picks / n) - 1)).toBeLessThan(0.06);
  });

  it('draws weighted candidates distinct, the first in proportion to weight', () => {
    const weights = [1, 2, 3, 4];
    const draw = new CandidateDraw(4, new SeededRandom(2), weights);
    const first = [0, 0, 0, 0];
    for (let p = 0; p < 50_000; p++) {
      draw.begin();
      const a = draw.next();
      const b = draw.next();
      const c = draw.next();
      const d = draw.next();
      expect(new Set([a, b, c, d]).size).toBe(4);
      first[a]!++;
    }
    weights.forEach((w, i) => {
      expect(Math.abs(first[i]! / (5000 * w) - 1)).toBeLessThan(0.04);
    });
  });

  it('stays distinct when one weight dominates (bounded retries, then the next free index)', () => {
    const draw = new CandidateDraw(3, new SeededRandom(3), [1e9, 1, 1]);
    for (let p = 0; p < 1000; p++) {
      draw.begin();
      expect(new Set([draw.next(), draw.next(), draw.next()]).size).toBe(3);
    }
  });
});

describe('mix32', () => {
  it('is a bijection on a sample and spreads consecutive inputs over the whole range', () => {
    const out = new Set<number>();
    let high = 0;
    for (let i = 0; i < 100_000; i++) {
      const h = mix32(i);
      out.add(h);
      if (h >= 2 ** 31) high++;
    }
    expect(out.size).toBe(100_000);
    expect(Math.abs(high / 50_000 - 1)).toBeLessThan(0.02);
  });

  it('derives distinct unsigned values per (base, i)', () => {
    const values = new Set<number>();
    for (let base = 0; base < 100; base++) for (let i = 0; i < 100; i++) values.add(mix32With(base * 7919, i));
    expect(values.size).toBe(10_000);
    for (const v of values) expect(v >>> 0).toBe(v);
  });
});
