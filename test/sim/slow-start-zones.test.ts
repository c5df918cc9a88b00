/**
 * The simulator running evenlb's slow start and zone routing: the production `Balancer` on
 * virtual time, with pods that queue when overloaded.
 * - `hpa-scale-out` with `least-request` and `--slow-start 20s`: the new pods' share ramps (at
 *   most 40% of their fair share in the first 2 s after ready, at least 90% by 25 s); without
 *   slow start they are at their fair share within 2 s.
 * - 11 pods over 3 zones (`pods.zones: [4, 4, 3]`), 10 clients 50/30/20 per zone
 *   (`clients.zones: [50, 30, 20]`), zone routing on: in band most
 *   requests stay in zone; with the busiest zone's pods overloaded, traffic spills over and
 *   per-pod max/mean stays ≤ 1.2.
 */
import { describe, expect, it } from 'vitest';
import type { SimDataplaneResult } from '../../src/sim/report/sim-report.js';
import { result, runBuiltin, runRaw } from './support.js';

/** The new pods' requests per bucket as a fraction of their fair share (4 of 8 pods: half). */
function freshShareOfFair(r: SimDataplaneResult, readyAt: number): { atMs: number; ofFair: number }[] {
  const series = r.series;
  if (series === null) throw new Error('no series');
  const initial = new Set(['v1-01', 'v1-02', 'v1-03', 'v1-04']);
  const buckets = Math.max(...series.pods.map((p) => p.requests.length));
  const out: { atMs: number; ofFair: number }[] = [];
  for (let b = 0; b < buckets; b++) {
    let total = 0;
    let fresh = 0;
    for (const p of series.pods) {
      const v = p.requests[b] ?? 0;
      total += v;
      if (!initial.has(p.name)) fresh += v;
    }
    const atMs = b * series.bucketMs - readyAt;
    if (total > 0 && atMs >= 0) out.push({ atMs, ofFair: fresh / total / 0.5 });
  }
  return out;
}

describe('sim: slow start', () => {
  const knobs = { bucketMs: 1000, windowMs: 40_000, readyDelayMs: 0 };

  it('hpa-scale-out, least-request, --slow-start 20s: new pods ramp (<= 40% of fair in 2 s, >= 90% by 25 s)', () => {
    const report = runBuiltin('hpa-scale-out', ['evenlb:least-request'], { ...knobs, slowStartMs: 20_000 });
    const shares = freshShareOfFair(result(report, 'evenlb:least-request'), report.settledAtMs);
    const first2s = shares.filter((s) => s.atMs < 2000);
    expect(first2s).toHaveLength(2);
    for (const s of first2s) expect(s.ofFair).toBeLessThanOrEqual(0.4);
    const mid = shares.find((s) => s.atMs === 10_000)?.ofFair as number;
    expect(mid).toBeGreaterThan(0.4);
    expect(mid).toBeLessThan(0.9);
    for (const s of shares.filter((x) => x.atMs >= 25_000 && x.atMs < 35_000))
      expect(s.ofFair).toBeGreaterThanOrEqual(0.9);
  });

  it('hpa-scale-out, least-request, no slow start: new pods at their fair share within 2 s', () => {
    const report = runBuiltin('hpa-scale-out', ['evenlb:least-request'], knobs);
    const shares = freshShareOfFair(result(report, 'evenlb:least-request'), report.settledAtMs);
    for (const s of shares.filter((x) => x.atMs >= 1000 && x.atMs < 10_000))
      expect(s.ofFair).toBeGreaterThanOrEqual(0.9);
  });
});

/** 11 pods (10 workers, 100 ms mean service: 100 requests/s each) over zones a, b, c (4-4-3); 10 clients 50/30/20. */
function zoneScenario(ratePerClient: number, zoneRouting: 'on' | 'off') {
  return {
    name: 'zones',
    pods: { count: 11, workers: 10, serviceTime: { type: 'exponential', meanMs: 100 }, zones: [4, 4, 3] },
    clients: {
      count: 10,
      connections: 10,
      arrival: { type: 'poisson', ratePerSecond: ratePerClient },
      zones: [50, 30, 20],
      zoneRouting,
    },
    measure: { from: 30_000, windowMs: 60_000 },
  };
}

/** Share of the measured requests served by each zone's pods (`a`, `b`, `c`), from the report's per-zone figures. */
function zoneShares(r: SimDataplaneResult): Map<string, number> {
  const out = new Map<string, number>();
  for (const z of r.zones ?? []) out.set(z.zone.replace(/^zone-/, ''), z.share);
  expect(out.size).toBe(3);
  return out;
}

describe('sim: zone routing', () => {
  it('in band (30% busy): requests follow the clients’ zones (a ≈ 50%, b ≈ 30%, c ≈ 20%)', () => {
    const onResult = result(runRaw(zoneScenario(33, 'on'), ['evenlb:least-request']), 'evenlb:least-request');
    const on = zoneShares(onResult);
    // Each per-client balancer routes for its client's zone: few requests cross zones.
    expect(onResult.crossZone as number).toBeLessThan(0.2);
    // Pods see their own zone's clients: shares near 50/30/20 mean >= 80% stayed in zone.
    expect(on.get('a') as number).toBeGreaterThan(0.45);
    expect(on.get('c') as number).toBeLessThan(0.25);
    const offResult = result(runRaw(zoneScenario(33, 'off'), ['evenlb:least-request']), 'evenlb:least-request');
    const off = zoneShares(offResult);
    expect(offResult.crossZone as number).toBeGreaterThan(0.5);
    expect(off.get('a') as number).toBeLessThan(0.4);
  });

  it('zone a overloaded (77% busy overall): traffic spills over and max/mean stays <= 1.2', () => {
    const r = result(runRaw(zoneScenario(85, 'on'), ['evenlb:least-request']), 'evenlb:least-request');
    expect(r.maxOverMean).toBeLessThanOrEqual(1.2);
    expect(zoneShares(r).get('a') as number).toBeLessThan(0.45);
  });
});
