/**
 * Rolling updates against the analytic model. Each step removes one old pod; its connections
 * reconnect uniformly over the pods ready at that moment (iptables / nftables). In units of
 * the mean (C/4 connections), with K = 4:
 *
 * maxSurge=1, maxUnavailable=0 — a new pod is ready before each old one leaves:
 *   remove o1 (1)          over {o2,o3,o4,n1}: o = 1.25,      n1 = 0.25
 *   remove o2 (1.25)       over {o3,o4,n1,n2}: o = 1.5625,    n1 = 0.5625, n2 = 0.3125
 *   remove o3 (1.5625)     over {o4,n1,n2,n3}: o4 = 1.953125, n1 = 0.953125, n2 = 0.703125, n3 = 0.390625
 *   remove o4 (1.953125)   over {n1..n4}: +0.48828125 → [1.441, 1.191, 0.879, 0.488]
 *
 * maxSurge=0, maxUnavailable=1 — an old pod leaves first, its replacement is not yet ready:
 *   remove o1 (1)     over {o2,o3,o4}: o = 4/3
 *   remove o2 (4/3)   over {o3,o4,n1}: o = 16/9, n1 = 4/9
 *   remove o3 (16/9)  over {o4,n1,n2}: o4 = 64/27, n1 = 28/27, n2 = 16/27
 *   remove o4 (64/27) over {n1,n2,n3}: +64/81 → [1.827, 1.383, 0.790, 0]   (n4 becomes ready after)
 */
import { describe, expect, it } from 'vitest';
import { overMeans, result, runBuiltin } from './support.js';

const surgeShares = [
  0.25 + 0.3125 + 0.390625 + 0.48828125,
  0.3125 + 0.390625 + 0.48828125,
  0.390625 + 0.48828125,
  0.48828125,
];
const unavailableShares = [4 / 9 + 16 / 27 + 64 / 81, 16 / 27 + 64 / 81, 64 / 81, 0];

describe('rolling-update', () => {
  const knobs = { connections: 16_000, clients: 160, ratePerSecond: 5, trials: 4 };
  const cases = [
    { maxSurge: 1, maxUnavailable: 0, expected: surgeShares },
    { maxSurge: 0, maxUnavailable: 1, expected: unavailableShares },
  ];
  for (const c of cases) {
    it(`maxSurge=${c.maxSurge}, maxUnavailable=${c.maxUnavailable}: new pods' shares ≈ [${c.expected.map((v) => v.toFixed(2)).join(', ')}] × mean (± 0.05)`, () => {
      expect(c.expected.reduce((a, b) => a + b, 0)).toBeCloseTo(4, 9);
      const report = runBuiltin('rolling-update', ['iptables', 'nftables', 'evenlb:round-robin'], {
        ...knobs,
        maxSurge: c.maxSurge,
        maxUnavailable: c.maxUnavailable,
      });
      for (const dataplane of ['iptables', 'nftables']) {
        const r = result(report, dataplane);
        expect(r.pods.filter((p) => p.measured).map((p) => p.name)).toEqual(['v2-01', 'v2-02', 'v2-03', 'v2-04']);
        const shares = overMeans(r);
        shares.forEach((s, i) => {
          expect(Math.abs(s - (c.expected[i] as number)), `${dataplane} pod ${i + 1}: ${s}`).toBeLessThanOrEqual(0.05);
        });
      }
      // Per-request balancing does not care how connections landed.
      expect(result(report, 'evenlb:round-robin').maxOverMean).toBeLessThan(1.01);
    });
  }

  it('replaces pods as the Deployment controller does: revision 2 only at the end, window after the rollout', () => {
    const report = runBuiltin('rolling-update', ['iptables'], { maxSurge: '25%', maxUnavailable: '25%' });
    expect(report.changeAtMs).toBe(5000);
    expect(report.window.fromMs).toBe(report.settledAtMs);
    expect(report.settledAtMs).toBeGreaterThan(5000);
    const r = result(report, 'iptables');
    expect(r.pods.filter((p) => p.measured).every((p) => p.revision === 2)).toBe(true);
    expect(r.newPods).toBe(4);
  });
});
