/**
 * The `heterogeneous` scenario — 8 pods, one at half speed, one 3× slower for a minute, 50
 * client replicas each with its own balancer, 80% of the fleet's capacity — and what a
 * dataplane can read of the pods: requests in flight, recent utilization and latency, and the
 * probe counter it reports through.
 *
 * - The scenario is what it says (rate from the fleet's capacity, the episode, 50 balancers),
 *   and the same seed gives byte-identical output.
 * - Even requests overload the slow pods: round-robin spreads requests evenly and its p99 runs
 *   away (seconds), while least-request and peak-EWMA, which see latency or in-flight counts,
 *   give the slow pods less and stay far below it.
 * - A dataplane that asks the pods (a test router: power of two choices on the pods' own
 *   in-flight counts, two probes per request) balances utilization better than least-request
 *   on its 50 separate views, with less than half its p99, and reports exactly two probes per
 *   request; dataplanes that send none report 0.
 */
import { describe, expect, it } from 'vitest';
import type { Random } from '../../src/core/random.js';
import type { RequestPicker } from '../../src/sim/dataplane/per-request-router.js';
import { resolveDataplanes } from '../../src/sim/dataplane/registry.js';
import type { SimClient } from '../../src/sim/model/sim-client.js';
import type { SimPod } from '../../src/sim/model/sim-pod.js';
import type { SimulationContext } from '../../src/sim/model/simulation-context.js';
import { formatReportJson } from '../../src/sim/report/report-json.js';
import { runScenario } from '../../src/sim/run-simulation.js';
import { findBuiltinScenario, parseBuiltinScenario } from '../../src/sim/scenario/builtin-scenarios.js';
import { fleetCapacityPerSecond } from '../../src/sim/scenario/scenario-text.js';
import { requestDataplane, result, runBuiltin } from './support.js';

/**
 * Asks two random eligible pods for their requests in flight (two probes, answered at once)
 * and sends the request to the one with fewer, as a client reading server-side load would.
 */
class ProbingPicker implements RequestPicker {
  readonly #ctx: SimulationContext;
  readonly #random: Random;

  constructor(ctx: SimulationContext) {
    this.#ctx = ctx;
    this.#random = ctx.streams.dataplane;
  }

  update(): void {}

  pick(_client: SimClient, _slot: number): SimPod | undefined {
    const pods = this.#ctx.eligiblePods;
    if (pods.length === 0) return undefined;
    const a = pods[this.#random.int(pods.length)] as SimPod;
    const b = pods[this.#random.int(pods.length)] as SimPod;
    this.#ctx.probeSent();
    this.#ctx.probeSent();
    return b.inFlight < a.inFlight ? b : a;
  }

  done(): void {}
}

const probing = requestDataplane(
  'test:probe-in-flight',
  'power of two choices on the pods’ own in-flight counts (two probes per request)',
  (ctx) => new ProbingPicker(ctx),
);

const builtin = findBuiltinScenario('heterogeneous');
if (builtin === undefined) throw new Error('no built-in scenario heterogeneous');

describe('heterogeneous: unequal pods, 50 independent client balancers', () => {
  it('is 8 pods (one at half speed, one 3× slower for 60 s), 50 replicas, at 80% of the capacity', () => {
    const s = parseBuiltinScenario(builtin);
    expect(s.pods.count).toBe(8);
    expect(s.pods.speeds).toEqual([1, 1, 1, 1, 1, 1, 1, 0.5]);
    expect(s.events).toEqual([{ type: 'slowdown', atMs: 40_000, durationMs: 60_000, pod: 3, factor: 3 }]);
    expect(s.clients.count).toBe(50);
    expect(s.clients.balancerScope).toBe('client');
    const offered = (s.clients.count as number) * (s.clients.arrival as { ratePerSecond: number }).ratePerSecond;
    expect(offered / fleetCapacityPerSecond(s)).toBeCloseTo(0.8, 9);
    expect(s.description).toContain('50 independent balancers');
    expect(s.description).toContain('v1-04 serves 3× slower from 40 s for 1 min');
    expect(s.description).toContain("80% of the fleet's capacity");
  });

  const dataplanes = ['evenlb:round-robin', 'evenlb:least-request', 'evenlb:peak-ewma'];
  const report = runBuiltin('heterogeneous', dataplanes, {}, 1);

  it('runs deterministically: the same seed gives byte-identical JSON', () => {
    expect(formatReportJson(runBuiltin('heterogeneous', dataplanes, {}, 1))).toBe(formatReportJson(report));
  });

  it('even requests overload the slow pods; latency- and in-flight-aware policies give them less', () => {
    const rr = result(report, 'evenlb:round-robin');
    const lr = result(report, 'evenlb:least-request');
    const ewma = result(report, 'evenlb:peak-ewma');
    for (const r of report.results) {
      expect(r.requests.failed).toBe(0);
      expect(r.probes).toEqual({ sent: 0, perRequest: 0 });
    }
    // Round-robin: even requests; the half-speed pod is saturated (utilization 1) and queues
    // without bound, so its p99 is in seconds.
    expect(rr.maxOverMean).toBeLessThan(1.01);
    const halfSpeed = (r: typeof rr) => r.pods[7]?.utilization as number;
    expect(halfSpeed(rr)).toBeGreaterThan(0.99);
    expect(rr.latencyMs?.p99).toBeGreaterThan(1000);
    for (const r of [lr, ewma]) {
      // The half-speed pod (v1-08) and the slowed one (v1-04) get less than their even share.
      expect(r.pods[7]?.overMean).toBeLessThan(0.8);
      expect(r.pods[3]?.overMean).toBeLessThan(0.9);
      expect((r.latencyMs?.p99 as number) * 10).toBeLessThan(rr.latencyMs?.p99 as number);
      expect(r.utilizationMaxOverMean).toBeLessThan(rr.utilizationMaxOverMean);
      expect(r.latencyMs?.p999).toBeGreaterThanOrEqual(r.latencyMs?.p99 as number);
    }
  });

  it('a dataplane reading the pods’ in-flight counts reports its probes and beats least-request’s separate views', () => {
    const scenario = parseBuiltinScenario(builtin);
    const probed = runScenario({
      scenario,
      dataplanes: [probing, ...resolveDataplanes(['evenlb:least-request'])],
      seed: 1,
    });
    const [p2c, lr] = probed.results as [(typeof probed.results)[0], (typeof probed.results)[0]];
    expect(p2c.requests.failed).toBe(0);
    expect(p2c.probes.sent).toBe(2 * p2c.requests.window);
    expect(p2c.probes.perRequest).toBe(2);
    expect(lr.probes).toEqual({ sent: 0, perRequest: 0 });
    expect(p2c.utilizationMaxOverMean).toBeLessThan(lr.utilizationMaxOverMean);
    expect(p2c.latencyMs?.p99 as number).toBeLessThan(0.5 * (lr.latencyMs?.p99 as number));
  });
});
