import { describe, expect, it } from 'vitest';
import { IN_FLIGHT_BUCKETS, InFlightLatency } from './in-flight-latency.js';

describe('InFlightLatency', () => {
  it('reads the estimate at the in-flight count asked, else the nearest recent one below, else above', () => {
    const l = new InFlightLatency(1_000);
    l.observe(0, 2, 20, 0);
    l.observe(0, 5, 50, 0);
    expect(l.estimate(0, 2, 10)).toBe(20);
    expect(l.estimate(0, 4, 10)).toBe(20);
    expect(l.estimate(0, 7, 10)).toBe(50);
    expect(l.estimate(0, 0, 10)).toBe(20);
    // Histories older than maxAgeMs are not read: the overall mean remains.
    expect(l.estimate(0, 3, 5_000)).toBeCloseTo(20 + (50 - 20) / 16, 6);
  });

  it('weighs each completion 1/8 in its count, and a stale count restarts', () => {
    const l = new InFlightLatency(1_000);
    l.observe(0, 0, 10, 0);
    l.observe(0, 0, 90, 1);
    expect(l.estimate(0, 0, 2)).toBe(20);
    l.observe(0, 0, 40, 5_000);
    expect(l.estimate(0, 0, 5_000)).toBe(40);
  });

  it('says "unknown" (NaN), not 0, before the first completion — also after its histories aged out', () => {
    const l = new InFlightLatency(1_000);
    expect(l.observed(0)).toBe(0);
    for (const inFlight of [0, 3, 500]) expect(l.estimate(0, inFlight, 0)).toBeNaN();
    l.observe(0, 1, 12, 0);
    expect(l.observed(0)).toBe(1);
    expect(l.estimate(0, 0, 10)).toBe(12);
    // Aged out: the overall mean, still known.
    expect(l.estimate(0, 0, 60_000)).toBe(12);
  });

  it('keeps one row per server: rows do not mix, grow on demand, and a cleared row is unknown again', () => {
    const l = new InFlightLatency(1_000, 2);
    l.observe(1, 0, 8, 0);
    expect(l.estimate(0, 0, 1)).toBeNaN();
    expect(l.estimate(1, 0, 1)).toBe(8);
    l.ensure(9);
    expect(l.rows).toBeGreaterThanOrEqual(10);
    expect(l.estimate(1, 0, 1)).toBe(8);
    expect(l.estimate(9, 0, 1)).toBeNaN();
    l.observe(9, IN_FLIGHT_BUCKETS + 5, 70, 1);
    expect(l.estimate(9, 1_000, 2)).toBe(70);
    l.clear(1);
    expect(l.estimate(1, 0, 2)).toBeNaN();
    expect(l.observed(1)).toBe(0);
  });

  it('counts above the last bucket share it', () => {
    expect(InFlightLatency.bucket(500)).toBe(InFlightLatency.bucket(63));
    expect(InFlightLatency.bucket(-1)).toBe(0);
  });
});
