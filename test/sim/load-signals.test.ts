/**
 * The evenlb dataplanes of policies that read what pods say of their load: `prequal` (probes
 * and in-flight in reports) and `report-weighted` (load reports). Same seed, same figures;
 * the dataplane's counters say how much load traffic flowed; and on pods of unequal speed both
 * send the slow pod less than least-request does, with a lower p99.
 */
import { describe, expect, it } from 'vitest';
import type { DataplaneCounters, DataplaneModel, RequestRouter } from '../../src/sim/dataplane/dataplane.js';
import { resolveDataplanes } from '../../src/sim/dataplane/registry.js';
import { Simulation } from '../../src/sim/model/simulation.js';
import type { SimulationOutcome } from '../../src/sim/model/simulation-outcome.js';
import { parseScenario } from '../../src/sim/scenario/scenario-spec.js';
import { result, runBuiltin } from './support.js';

/** 4 pods × 4 workers, the last at half speed; 20 clients at 70% of the fleet's capacity. */
const unequal = {
  name: 'unequal',
  pods: { count: 4, workers: 4, serviceTime: { type: 'fixed', valueMs: 5 }, speeds: [1, 1, 1, 0.5] },
  clients: { count: 20, connections: 20, arrival: { type: 'poisson', ratePerSecond: (0.7 * 3.5 * 4 * 200) / 20 } },
  measure: { from: 2000, windowMs: 20_000 },
};

function run(policy: string, seed = 1): { out: SimulationOutcome; counters: DataplaneCounters | undefined } {
  const model = resolveDataplanes([`evenlb:${policy}`])[0] as DataplaneModel;
  let router: RequestRouter | undefined;
  const wrapped: DataplaneModel = { ...model, createRouter: (ctx) => (router = model.createRouter(ctx)) };
  const out = new Simulation({ scenario: parseScenario(unequal, 'test'), dataplane: wrapped, seed }).run();
  return { out, counters: router?.counters?.() };
}

describe('evenlb dataplanes with load signals', () => {
  it.each(['prequal', 'report-weighted'])('evenlb:%s gives the same figures from the same seed', (policy) => {
    const a = runBuiltin('steady', [`evenlb:${policy}`], {}, 3);
    const b = runBuiltin('steady', [`evenlb:${policy}`], {}, 3);
    expect(result(a, `evenlb:${policy}`)).toEqual(result(b, `evenlb:${policy}`));
    expect(result(a, `evenlb:${policy}`).requests.failed).toBe(0);
  });

  it('counts load traffic: prequal probes ~4% of requests, reports ride on every response; least-request exchanges none', () => {
    const prequal = run('prequal');
    const sent = prequal.out.requestsSent;
    expect(prequal.counters!.probes / sent).toBeGreaterThan(0.035);
    expect(prequal.counters!.probes / sent).toBeLessThanOrEqual(0.0401);
    expect(prequal.counters!.probeAnswers / prequal.counters!.probes).toBeGreaterThan(0.99);
    // Every completed request carried a report (the few in flight at the end did not complete).
    expect(prequal.counters!.loadReports / sent).toBeGreaterThan(0.99);
    const weighted = run('report-weighted');
    expect(weighted.counters!.probes).toBe(0);
    expect(weighted.counters!.loadReports / weighted.out.requestsSent).toBeGreaterThan(0.99);
    expect(run('least-request').counters).toEqual({ probes: 0, probeAnswers: 0, loadReports: 0, pushbacks: 0 });
  });

  it('on unequal pods, prequal and report-weighted send the half-speed pod less than least-request, at a lower p99', () => {
    const share = (out: SimulationOutcome): number => (out.pods[3]!.windowRequests / out.windowRequests) * 4;
    const p99 = (out: SimulationOutcome): number => out.latency.quantile(0.99)!;
    const lr = run('least-request').out;
    for (const policy of ['prequal', 'report-weighted']) {
      const { out } = run(policy);
      expect(out.requestsFailed).toBe(0);
      // Capacity share of the half-speed pod: 0.5 / 3.5 × 4 ≈ 0.57 of an even share.
      expect(share(out)).toBeLessThan(0.75 * share(lr));
      expect(p99(out)).toBeLessThan(0.8 * p99(lr));
    }
  });
});
