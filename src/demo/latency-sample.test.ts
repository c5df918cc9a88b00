import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../core/random.js';
import { LatencySample } from './latency-sample.js';

describe('LatencySample', () => {
  it('gives exact nearest-rank quantiles while under capacity', () => {
    const s = new LatencySample(new SeededRandom(1), 1000);
    for (let i = 100; i >= 1; i--) s.add(i);
    expect(s.quantiles()).toEqual({ p50: 50, p90: 90, p99: 99, max: 100 });
    expect(s.seen).toBe(100);
  });

  it('is empty before the first value', () => {
    expect(new LatencySample(new SeededRandom(1), 10).quantiles()).toBeUndefined();
  });

  it('keeps a uniform sample past capacity: quantiles of 0..99,999 within 3% with 2,000 kept', () => {
    const s = new LatencySample(new SeededRandom(7), 2000);
    for (let i = 0; i < 100_000; i++) s.add(i);
    const q = s.quantiles();
    expect(q?.p50 ?? 0).toBeGreaterThan(0.47 * 100_000);
    expect(q?.p50 ?? 0).toBeLessThan(0.53 * 100_000);
    expect(q?.p90 ?? 0).toBeGreaterThan(0.87 * 100_000);
    expect(q?.p90 ?? 0).toBeLessThan(0.93 * 100_000);
    expect(s.seen).toBe(100_000);
  });

  it('rejects a capacity that is not a positive integer, naming it', () => {
    expect(() => new LatencySample(new SeededRandom(1), 0)).toThrow(/capacity must be a positive integer, got 0/);
  });
});
