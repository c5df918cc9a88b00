import { describe, expect, it } from 'vitest';
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
});
