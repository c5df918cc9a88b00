/**
 * HPA scale-out K → K′ behind kube-proxy. Without reconnects the connections stay where
 * they are: the new pods get nothing. With a maximum connection age T (jittered ±10%) and
 * ages staggered over [0, T), a fraction t/T of the connections has been re-dialled t after
 * the scale-out, each landing on a new pod with probability (K′−K)/K′, so the new pods'
 * share is min(t/T, 1)·(K′−K)/K′ (re-dials after T are again uniform over K′ pods).
 */
import { describe, expect, it } from 'vitest';
import type { SimDataplaneResult } from '../../src/sim/report/sim-report.js';
import { result, runBuiltin } from './support.js';

/** The new pods' share of each bucket's requests, with the bucket's start time. */
function newPodShares(r: SimDataplaneResult, initialNames: ReadonlySet<string>) {
  const series = r.series;
  if (series === null) throw new Error('no series');
  const buckets = Math.max(...series.pods.map((p) => p.requests.length));
  const out: { startMs: number; share: number }[] = [];
  for (let b = 0; b < buckets; b++) {
    let total = 0;
    let fresh = 0;
    for (const p of series.pods) {
      const v = p.requests[b] ?? 0;
      total += v;
      if (!initialNames.has(p.name)) fresh += v;
    }
    if (total > 0) out.push({ startMs: b * series.bucketMs, share: fresh / total });
  }
  return out;
}

describe('hpa-scale-out', () => {
  it('without reconnects leaves the new pods at 0 (iptables, IPVS), while evenlb spreads at once', () => {
    const report = runBuiltin('hpa-scale-out', ['iptables', 'ipvs-rr', 'evenlb:least-request']);
    for (const name of ['iptables', 'ipvs-rr']) {
      const r = result(report, name);
      const fresh = r.pods.filter((p) => p.name > 'v1-04');
      expect(fresh).toHaveLength(4);
      for (const p of fresh) expect(p.requests).toBe(0);
      expect(r.newPodsFairShareMs).toBeNull();
      expect(r.maxOverMean).toBeGreaterThan(1.9);
    }
    const evenlb = result(report, 'evenlb:least-request');
    expect(evenlb.maxOverMean).toBeLessThan(1.05);
    expect(evenlb.newPodsFairShareMs).not.toBeNull();
    expect(evenlb.newPodsFairShareMs as number).toBeLessThanOrEqual(2 * (evenlb.series?.bucketMs ?? 0));
  });

  it('with a maximum age T, the new pods’ share t after the scale-out ≈ min(t/T, 1)·(K′−K)/K′ (± 0.03)', () => {
    const T = 30_000;
    const report = runBuiltin('hpa-scale-out', ['iptables'], {
      maxConnectionAgeMs: T,
      readyDelayMs: 0,
      connections: 10_000,
      clients: 200,
      ratePerSecond: 20,
      bucketMs: 2500,
      windowMs: 60_000,
    });
    const r = result(report, 'iptables');
    const readyAt = report.settledAtMs;
    expect(readyAt).toBe(10_000);
    const initial = new Set(['v1-01', 'v1-02', 'v1-03', 'v1-04']);
    const shares = newPodShares(r, initial);
    let checked = 0;
    for (const { startMs, share } of shares) {
      const mid = startMs + 1250 - readyAt;
      if (startMs < readyAt) {
        expect(share).toBe(0);
        continue;
      }
      const expected = Math.min(mid / T, 1) * (4 / 8);
      expect(Math.abs(share - expected), `t=${mid} ms: share ${share}, expected ${expected}`).toBeLessThanOrEqual(0.03);
      checked++;
    }
    expect(checked).toBeGreaterThanOrEqual(20);
    // 90% of the fair share is reached around 0.9·T.
    expect(r.newPodsFairShareMs as number).toBeGreaterThan(0.75 * T);
    expect(r.newPodsFairShareMs as number).toBeLessThan(1.1 * T);
  });

  it('server-side recycling (5 requests per connection) also brings the new pods up', () => {
    const report = runBuiltin('hpa-scale-out', ['iptables'], { serverMaxRequestsPerConnection: 5 });
    const r = result(report, 'iptables');
    const fresh = r.pods.filter((p) => p.name > 'v1-04');
    const freshShare = fresh.reduce((s, p) => s + p.share, 0);
    expect(freshShare).toBeGreaterThan(0.45);
    expect(r.maxOverMean).toBeLessThan(1.25);
  });
});
