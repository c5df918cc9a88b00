/**
 * Unequal pods in the simulator, each effect checked against what it must do:
 *
 * - a capacity factor (`pods.speeds`): a pod at half speed serves half as much at saturation,
 *   and under round-robin at moderate load is twice as busy as the others (utilization);
 * - a slowdown event: the pod's latency rises by the factor only while the episode lasts, and
 *   stretches a request already in service from the moment it starts;
 * - GC-like pauses: a pause freezes what is in service; drawn pauses come at the expected
 *   frequency and add the expected latency (p99 and mean of the closed form);
 * - p99 and p99.9 from the latency histogram match an M/M/1 queue's exponential sojourn time;
 * - utilization max/mean of an equal fleet under least-request is near 1.
 *
 * Small scenarios on virtual time: the whole file runs in a few seconds.
 */
import { describe, expect, it } from 'vitest';
import { resolveDataplanes } from '../../src/sim/dataplane/registry.js';
import { Simulation } from '../../src/sim/model/simulation.js';
import type { SimDataplaneResult } from '../../src/sim/report/sim-report.js';
import { parseScenario } from '../../src/sim/scenario/scenario-spec.js';
import { runRaw } from './support.js';

const within = (actual: number, expected: number, tolerance: number, what: string) => {
  expect(actual / expected, `${what}: ${actual} vs ${expected}`).toBeGreaterThan(1 - tolerance);
  expect(actual / expected, `${what}: ${actual} vs ${expected}`).toBeLessThan(1 + tolerance);
};

function only(raw: unknown, dataplane: string, seed = 1): SimDataplaneResult {
  return runRaw(raw, [dataplane], seed).results[0] as SimDataplaneResult;
}

/** One request sent at 0 to one single-worker pod with a fixed 100 ms service time. */
const oneRequest = (pods: Record<string, unknown>, events: unknown[] = []) => ({
  name: 'one-request',
  pods: { count: 1, workers: 1, serviceTime: { type: 'fixed', valueMs: 100 }, ...pods },
  clients: { connections: 1, arrival: { type: 'closed-loop', count: 1 } },
  events,
  measure: { from: 'start' },
});

describe('capacity factors (pods.speeds)', () => {
  it('a pod at half speed serves half as much as the others at saturation (least-request, ±10%)', () => {
    const r = only(
      {
        name: 'saturated',
        pods: { count: 4, workers: 2, speeds: [1, 1, 1, 0.5] },
        // 80 requests outstanding for 8 workers: every pod always has a queue.
        clients: { count: 10, connections: 10, arrival: { type: 'closed-loop', concurrency: 8 } },
        measure: { from: 2000, windowMs: 20_000 },
      },
      'evenlb:least-request',
    );
    const [a, b, c, slow] = r.pods.map((p) => p.requests) as [number, number, number, number];
    within(slow / ((a + b + c) / 3), 0.5, 0.1, 'half-speed pod over the others');
    for (const p of r.pods) within(p.utilization as number, 1, 0.02, `${p.name} utilization at saturation`);
  });

  it('under round-robin at moderate load the half-speed pod is twice as busy as the others (±8%)', () => {
    const r = only(
      {
        name: 'moderate',
        pods: { count: 4, workers: 2, speeds: [1, 1, 1, 0.5] },
        // 100 req/s per pod, 2 workers, 5 ms: 25% busy at speed 1, 50% at half speed.
        clients: { count: 8, connections: 8, arrival: { type: 'poisson', ratePerSecond: 50 } },
        measure: { from: 'start', windowMs: 60_000 },
      },
      'evenlb:round-robin',
    );
    const u = r.pods.map((p) => p.utilization as number);
    const others = (u[0]! + u[1]! + u[2]!) / 3;
    within(others, 0.25, 0.05, 'speed-1 pods');
    within(u[3]! / others, 2, 0.08, 'half-speed pod over the others');
    // Busiest over mean: 2 / ((3 + 2) / 4) = 1.6.
    within(r.utilizationMaxOverMean, 1.6, 0.05, 'utilization max/mean');
    expect(r.maxOverMean).toBeLessThan(1.01);
  });

  it('drawn speeds (pods.speedDistribution): seeded, different per pod, the same for every dataplane', () => {
    const raw = {
      name: 'drawn',
      pods: { count: 6, workers: 2, speedDistribution: { type: 'uniform', min: 0.5, max: 1.5 } },
      clients: { count: 6, connections: 6, arrival: { type: 'poisson', ratePerSecond: 50 } },
      measure: { from: 'start', windowMs: 20_000 },
    };
    const report = runRaw(raw, ['evenlb:round-robin', 'iptables'], 3);
    const utilizations = report.results.map((r) => r.pods.map((p) => p.utilization as number));
    const [rr] = utilizations as [number[]];
    // Equal requests, unequal speeds: utilizations differ pod to pod as 1 / speed does.
    expect(Math.max(...rr) / Math.min(...rr)).toBeGreaterThan(1.3);
    expect(runRaw(raw, ['evenlb:round-robin'], 3).results[0]?.pods).toEqual(report.results[0]?.pods);
  });
});

describe('noisy neighbours (slowdown events)', () => {
  /** Four pods at 5% busy, 5 ms per request; v1-02 serves 3× slower from 10 s to 20 s. */
  const episode = (from: number) => ({
    name: 'episode',
    pods: { count: 4, workers: 4, serviceTime: { type: 'fixed', valueMs: 5 } },
    clients: { count: 8, connections: 8, arrival: { type: 'poisson', ratePerSecond: 40 } },
    events: [{ type: 'slowdown', atMs: 10_000, durationMs: 10_000, pod: 1, factor: 3 }],
    measure: { from, windowMs: 10_000 },
  });

  it("shows in that pod's latency only during the episode (×3 before and after ×1, ±5%)", () => {
    for (const [from, factor] of [
      [0, 1],
      [10_000, 3],
      [20_000, 1],
    ] as const) {
      const r = only(episode(from), 'evenlb:round-robin');
      const mean = r.pods.map((p) => p.latencyMs?.mean as number);
      const others = (mean[0]! + mean[2]! + mean[3]!) / 3;
      within(mean[1]! / others, factor, 0.05, `v1-02 over the others from ${from} ms`);
      within(others, 5, 0.05, `the other pods' mean latency from ${from} ms`);
    }
  });

  it('stretches a request already in service from the moment it starts (100 ms, 2× from 50 ms: 150 ms)', () => {
    const r = only(oneRequest({}, [{ type: 'slowdown', atMs: 50, durationMs: 10_000, pod: 0, factor: 2 }]), 'iptables');
    expect(r.latencyMs?.max).toBeCloseTo(150, 9);
    const after = only(oneRequest({}, [{ type: 'slowdown', atMs: 50, durationMs: 20, pod: 0, factor: 2 }]), 'iptables');
    // 50 ms at full speed, 20 ms at half (10 ms of work), the last 40 ms at full speed.
    expect(after.latencyMs?.max).toBeCloseTo(110, 9);
  });
});

describe('GC-like pauses (pods.pauses)', () => {
  it('freeze what is in service: 100 ms of work, paused 20 ms after every 30 ms, ends at 160 ms', () => {
    const pauses = { interval: { type: 'fixed', valueMs: 30 }, duration: { type: 'fixed', valueMs: 20 } };
    const r = only(oneRequest({ pauses }), 'iptables');
    expect(r.latencyMs?.max).toBeCloseTo(160, 9);
  });

  it('come at the expected frequency and add the expected latency (p99 and mean of the closed form, ±10%)', () => {
    // 8 pods, 1 ms requests at 2.5% busy; each pod pauses 50 ms after running for an
    // exponential time of mean 1 s: paused a fraction f = 50 / 1050 of the time. A request that
    // arrives in a pause waits out its rest, uniform in [0, 50] ms; nearly all others take 1 ms.
    const scenario = parseScenario(
      {
        name: 'pauses',
        pods: {
          count: 8,
          workers: 4,
          serviceTime: { type: 'fixed', valueMs: 1 },
          pauses: { interval: { type: 'exponential', meanMs: 1000 }, duration: { type: 'fixed', valueMs: 50 } },
        },
        clients: { count: 8, connections: 8, arrival: { type: 'poisson', ratePerSecond: 100 } },
        measure: { from: 'start', windowMs: 200_000 },
      },
      'pauses',
    );
    const [dataplane] = resolveDataplanes(['evenlb:round-robin']);
    const outcome = new Simulation({ scenario, dataplane: dataplane!, seed: 2 }).run();
    const pauses = outcome.pods.reduce((sum, p) => sum + p.pauses, 0);
    within(pauses, (8 * 200_000) / 1050, 0.1, 'pauses over 200 s');
    const f = 50 / 1050;
    const latency = outcome.latency;
    within(latency.meanMs, 1 + f * 25.5, 0.1, 'mean latency');
    // P(latency > x) = f × (51 − x) / 50 for 1 < x < 51, so p99 = 51 − 0.5 / f.
    within(latency.quantile(0.99) as number, 51 - 0.5 / f, 0.1, 'p99');
  });
});

describe('latency percentiles and utilization figures', () => {
  it('p99 and p99.9 of an M/M/1 queue: exponential sojourn of mean 1 / (μ − λ) (±6%, ±10%)', () => {
    // One single-worker pod, 1 ms mean service, 500 req/s: ρ = 0.5, mean sojourn 2 ms.
    const r = only(
      {
        name: 'mm1',
        pods: { count: 1, workers: 1, serviceTime: { type: 'exponential', meanMs: 1 } },
        clients: { connections: 1, arrival: { type: 'poisson', ratePerSecond: 500 } },
        measure: { from: 1000, windowMs: 400_000 },
      },
      'iptables',
    );
    const latency = r.latencyMs!;
    within(latency.mean, 2, 0.03, 'mean');
    within(latency.p99, 2 * Math.log(100), 0.06, 'p99');
    within(latency.p999, 2 * Math.log(1000), 0.1, 'p99.9');
    within(r.pods[0]?.utilization as number, 0.5, 0.03, 'utilization');
  });

  it('an equal fleet under least-request: utilization max/mean near 1 (≤ 1.05)', () => {
    const r = only(
      {
        name: 'equal',
        pods: { count: 4, workers: 2 },
        clients: { count: 8, connections: 8, arrival: { type: 'poisson', ratePerSecond: 120 } },
        measure: { from: 'start', windowMs: 60_000 },
      },
      'evenlb:least-request',
    );
    expect(r.utilizationMaxOverMean).toBeGreaterThanOrEqual(1);
    expect(r.utilizationMaxOverMean).toBeLessThan(1.05);
    expect(r.probes).toEqual({ sent: 0, perRequest: 0 });
  });
});
