import { describe, expect, it } from 'vitest';
import { createRandom, SeededRandom } from './random.js';

describe('SeededRandom', () => {
  it('repeats the same sequence for the same seed, and differs for another', () => {
    const a = new SeededRandom(123);
    const b = new SeededRandom(123);
    const c = new SeededRandom(124);
    const sa = Array.from({ length: 1000 }, () => a.next());
    expect(Array.from({ length: 1000 }, () => b.next())).toEqual(sa);
    expect(Array.from({ length: 1000 }, () => c.next())).not.toEqual(sa);
  });

  it('is pinned: the first draws of seed 1 never change across versions or platforms', () => {
    // Simulations and recorded scenarios replay by seed; a change here is a breaking change.
    const r = new SeededRandom(1);
    expect(Array.from({ length: 4 }, () => r.int(1_000_000))).toEqual(PINNED_SEED_1);
  });

  it('normalises the seed to 32 bits', () => {
    expect(new SeededRandom(-1).seed).toBe(0xffffffff);
    expect(new SeededRandom(2 ** 32 + 5).next()).toBe(new SeededRandom(5).next());
  });

  it('draws floats in [0, 1) and integers in [0, n), uniformly (χ² over 20 bins)', () => {
    const r = new SeededRandom(7);
    const bins = new Array<number>(20).fill(0);
    const draws = 200_000;
    for (let i = 0; i < draws; i++) {
      const x = r.next();
      expect(x >= 0 && x < 1).toBe(true);
      bins[Math.floor(x * 20)]!++;
    }
    const expected = draws / 20;
    const chi2 = bins.reduce((sum, o) => sum + (o - expected) ** 2 / expected, 0);
    // 19 degrees of freedom: P(χ² > 43.8) = 0.001.
    expect(chi2).toBeLessThan(43.8);
    const counts = new Array<number>(7).fill(0);
    for (let i = 0; i < 70_000; i++) counts[r.int(7)]!++;
    for (const c of counts) expect(Math.abs(c / 10_000 - 1)).toBeLessThan(0.04);
    expect(r.int(1)).toBe(0);
  });

  it('forks an independent, reproducible stream', () => {
    const parent = new SeededRandom(9);
    const f1 = parent.fork();
    const again = new SeededRandom(9).fork();
    expect(Array.from({ length: 100 }, () => f1.next())).toEqual(Array.from({ length: 100 }, () => again.next()));
    expect(f1.seed).not.toBe(9);
  });

  it('createRandom seeds from the given seed, or picks one', () => {
    expect(createRandom(5).next()).toBe(new SeededRandom(5).next());
    const r = createRandom();
    expect(Number.isInteger(r.seed) && r.seed >= 0 && r.seed < 2 ** 32).toBe(true);
  });
});

const PINNED_SEED_1 = [425_649, 790_421, 691_014, 524_112];
