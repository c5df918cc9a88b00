/**
 * The simulator's fair-share shedding against age-based recycling, through kube-proxy's
 * iptables model (seed 1). For each scenario, fair-share with the default tolerance (10%) sets
 * a balance B; age-based recycling at the longest age of a ladder whose max/mean is at most
 * B × 1.02 ("equal balance", 2% stated tolerance) sets the reconnect rate to beat. Fair-share
 * must need at most one fifth of it.
 */
import { describe, expect, it } from 'vitest';
import { result, runBuiltin } from './support.js';

const AGES_MS = [60_000, 30_000, 20_000, 15_000, 10_000, 5_000, 2_000, 1_000];
const EQUAL_BALANCE = 1.02;

describe('fair-share shedding in the simulator', () => {
  for (const scenario of ['steady', 'hpa-scale-out', 'rolling-update']) {
    it(`${scenario}: at equal balance, at most 1/5 of the reconnects of age-based recycling`, () => {
      const fs = result(runBuiltin(scenario, ['iptables'], { serverFairShareTolerance: 0.1 }), 'iptables');
      const target = fs.maxOverMean * EQUAL_BALANCE;
      let age: { ms: number; maxOverMean: number; reconnectsPerMinute: number } | undefined;
      for (const ms of AGES_MS) {
        const r = result(runBuiltin(scenario, ['iptables'], { serverMaxConnectionAgeMs: ms }), 'iptables');
        // A connection dataplane: reconnectsPerMinute is a number (null only for per-request ones).
        age = { ms, maxOverMean: r.maxOverMean, reconnectsPerMinute: r.reconnectsPerMinute ?? Number.NaN };
        if (r.maxOverMean <= target) break;
      }
      const summary = `fair-share ${fs.maxOverMean} at ${fs.reconnectsPerMinute}/min; age ${age?.ms} ms ${age?.maxOverMean} at ${age?.reconnectsPerMinute}/min`;
      expect(age, summary).toBeDefined();
      // Without recycling the skew stays; fair-share removes most of it.
      expect(fs.maxOverMean, summary).toBeLessThanOrEqual(1.12);
      expect(fs.reconnectsPerMinute, summary).toBeLessThanOrEqual((age?.reconnectsPerMinute ?? 0) / 5);
      expect(fs.requests.failed).toBe(0);
    }, 120_000);
  }

  it('is deterministic: the same seed gives the same figures', () => {
    const a = result(
      runBuiltin('steady', ['iptables'], { serverFairShareTolerance: 0.1, windowMs: 60_000 }),
      'iptables',
    );
    const b = result(
      runBuiltin('steady', ['iptables'], { serverFairShareTolerance: 0.1, windowMs: 60_000 }),
      'iptables',
    );
    expect(a).toEqual(b);
  });
});
