/**
 * The simulator against closed forms: C connections placed uniformly at random on K pods
 * (kube-proxy iptables / nftables) have E[max/mean] = 1.77 (K=4, C=8), 1.54 (4, 16), 1.26
 * (4, 64), 2.60 (8, 8), 2.10 (8, 16), 1.53 (8, 64) — exact values from the distribution of
 * the maximum occupancy (DESIGN.md). `random-connections` sends one request per connection by
 * default: a pod's requests are then exactly its connections, and a case's trials cost C
 * requests each — checked as counts of requests and events, not as time.
 *
 * Trials per case: the fewest (rounded up) that keep the tolerance at >= 4 standard errors of
 * the estimated mean, after taking off how far the rounded expected value sits from the exact
 * one. Per case, exact from the distribution of the maximum occupancy: E[max/mean] and the
 * standard deviation s of one trial's max/mean; the standard error over n trials is s/sqrt(n),
 * so n >= (4 s / (tolerance - |E - expected|))^2:
 *
 *   K  C   exact E  s       |E-exp|  room    n min  n used  room / (s/sqrt(n))
 *   4  8   1.7690   0.3941  0.0010   0.0290  2946   3000    4.03
 *   4  16  1.5348   0.2717  0.0052   0.0248  1928   2000    4.08
 *   4  64  1.2626   0.1297  0.0026   0.0174  892    1000    4.24
 *   8  8   2.5972   0.6847  0.0028   0.0372  5411   5000    3.84 (4.1 of the tolerance itself;
 *                                                               kept at the former 5,000)
 *   8  16  2.1007   0.4519  0.0007   0.0293  3809   4000    4.10
 *   8  64  1.5294   0.2009  0.0006   0.0194  1715   2000    4.32
 */
import { describe, expect, it } from 'vitest';
import { result, runBuiltin } from './support.js';

describe('random-connections against the closed form', () => {
  const cases = [
    { pods: 4, connections: 8, expected: 1.77, tolerance: 0.03, trials: 3000 },
    { pods: 4, connections: 16, expected: 1.54, tolerance: 0.03, trials: 2000 },
    { pods: 4, connections: 64, expected: 1.26, tolerance: 0.02, trials: 1000 },
    { pods: 8, connections: 8, expected: 2.6, tolerance: 0.04, trials: 5000 },
    { pods: 8, connections: 16, expected: 2.1, tolerance: 0.03, trials: 4000 },
    { pods: 8, connections: 64, expected: 1.53, tolerance: 0.02, trials: 2000 },
  ];
  for (const c of cases) {
    it(`iptables, K=${c.pods}, C=${c.connections}: mean max/mean ${c.expected} ± ${c.tolerance} over ${c.trials.toLocaleString('en')} trials of C requests`, () => {
      const trials = c.trials;
      const report = runBuiltin('random-connections', ['iptables'], {
        pods: c.pods,
        connections: c.connections,
        trials,
      });
      const r = result(report, 'iptables');
      expect(report.trials).toBe(trials);
      expect(r.maxOverMeanTrials?.mean).toBe(r.maxOverMean);
      expect(Math.abs(r.maxOverMean - c.expected)).toBeLessThanOrEqual(c.tolerance);
      // The default is cheap: one request per connection, two events per request.
      expect(r.requests.sent).toBe(trials * c.connections);
      expect(r.events).toBeLessThanOrEqual(trials * (2 * c.connections + 1));
    });
  }

  it('nftables (uniform per new connection) matches the same closed form, K=4, C=8 (3,000 trials, as iptables above)', () => {
    const r = result(
      runBuiltin('random-connections', ['nftables'], { pods: 4, connections: 8, trials: 3000 }, 2),
      'nftables',
    );
    expect(Math.abs(r.maxOverMean - 1.77)).toBeLessThanOrEqual(0.03);
  });

  it('per-connection placement does not depend on how many requests each connection carries', () => {
    const one = runBuiltin('random-connections', ['iptables'], { trials: 50 });
    const many = runBuiltin('random-connections', ['iptables'], { trials: 50, requestsPerClient: 20 });
    expect(result(many, 'iptables').maxOverMean).toBeCloseTo(result(one, 'iptables').maxOverMean, 9);
    expect(result(many, 'iptables').requests.sent).toBe(20 * result(one, 'iptables').requests.sent);
  });
});
