/**
 * The simulator against closed forms: C connections placed uniformly at random on K pods
 * (kube-proxy iptables / nftables) have E[max/mean] = 1.77 (K=4, C=8), 1.54 (4, 16), 1.26
 * (4, 64), 2.60 (8, 8), 2.10 (8, 16), 1.53 (8, 64) — exact values from the distribution of
 * the maximum occupancy (DESIGN.md). `random-connections` sends one request per connection by
 * default: a pod's requests are then exactly its connections, and 5,000 trials of any case
 * cost C requests per trial — checked as counts of requests and events, not as time.
 */
import { describe, expect, it } from 'vitest';
import { result, runBuiltin } from './support.js';

describe('random-connections against the closed form', () => {
  const cases = [
    { pods: 4, connections: 8, expected: 1.77, tolerance: 0.03 },
    { pods: 4, connections: 16, expected: 1.54, tolerance: 0.03 },
    { pods: 4, connections: 64, expected: 1.26, tolerance: 0.02 },
    { pods: 8, connections: 8, expected: 2.6, tolerance: 0.04 },
    { pods: 8, connections: 16, expected: 2.1, tolerance: 0.03 },
    { pods: 8, connections: 64, expected: 1.53, tolerance: 0.02 },
  ];
  for (const c of cases) {
    it(`iptables, K=${c.pods}, C=${c.connections}: mean max/mean ${c.expected} ± ${c.tolerance} over 5,000 trials of C requests`, () => {
      const trials = 5000;
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

  it('nftables (uniform per new connection) matches the same closed form, K=4, C=8', () => {
    const r = result(
      runBuiltin('random-connections', ['nftables'], { pods: 4, connections: 8, trials: 5000 }, 2),
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
