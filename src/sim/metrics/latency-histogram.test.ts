import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../core/random.js';
import { LatencyHistogram } from './latency-histogram.js';

describe('LatencyHistogram', () => {
  it('gives quantiles within 2% and exact count, mean and max', () => {
    const h = new LatencyHistogram();
    for (let i = 1; i <= 10_000; i++) h.record(i / 10);
    expect(h.count).toBe(10_000);
    expect(h.meanMs).toBeCloseTo(500.05, 6);
    expect(h.maxMs).toBe(1000);
    expect((h.quantile(0.5) as number) / 500).toBeGreaterThan(0.98);
    expect((h.quantile(0.5) as number) / 500).toBeLessThan(1.02);
    expect((h.quantile(0.99) as number) / 990).toBeGreaterThan(0.98);
    expect((h.quantile(0.99) as number) / 990).toBeLessThan(1.02);
  });

  it('merges and handles empties and extremes', () => {
    const a = new LatencyHistogram();
    const b = new LatencyHistogram();
    expect(a.quantile(0.99)).toBeUndefined();
    a.record(0);
    b.record(5e12);
    a.merge(b);
    expect(a.count).toBe(2);
    expect(a.quantile(0.5)).toBeLessThan(0.01);
    expect(a.quantile(1)).toBeLessThanOrEqual(5e12);
  });

  it('p99 and p99.9 of exponential latencies: mean × ln 100 and mean × ln 1000, within 2%', () => {
    const h = new LatencyHistogram();
    const r = new SeededRandom(11);
    const meanMs = 8;
    for (let i = 0; i < 1_000_000; i++) h.record(-meanMs * Math.log(1 - r.next()));
    for (const [q, expected] of [
      [0.99, meanMs * Math.log(100)],
      [0.999, meanMs * Math.log(1000)],
    ] as const) {
      const ratio = (h.quantile(q) as number) / expected;
      expect(ratio, `q ${q}`).toBeGreaterThan(0.98);
      expect(ratio, `q ${q}`).toBeLessThan(1.02);
    }
  });
});
