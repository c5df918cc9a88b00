/**
 * The apiserver's webhook client models. Legacy: an idle pool keyed by the Service host, the
 * endpoint chosen only when dialling — so a quiet apiserver sends everything down one
 * connection to one pod, and keeps reusing idle connections to pods already removed from the
 * endpoints. Round trip: a random ready endpoint per request. Server-side recycling (close
 * after N requests) forces the legacy client to dial again, which spreads it.
 */
import { describe, expect, it } from 'vitest';
import { result, runRaw } from './support.js';

const trickle = (server: Record<string, unknown> = {}, events: unknown[] = []) => ({
  name: 'trickle',
  pods: { count: 4, workers: 4, serviceTime: { type: 'exponential', meanMs: 1 }, readyDelayMs: 1000 },
  clients: { count: 1, connections: 1, arrival: { type: 'poisson', ratePerSecond: 10 } },
  server,
  events,
  measure: { from: 'start', windowMs: 200_000 },
});

describe('apiserver webhook client models', () => {
  it('legacy pins a quiet apiserver to one pod at a time; round trip spreads it', () => {
    const report = runRaw(trickle(), ['apiserver-legacy', 'apiserver-roundtrip', 'evenlb:round-robin']);
    const legacy = result(report, 'apiserver-legacy');
    // A rare overlap dials a second connection; LIFO reuse may then move the trickle to it.
    expect(legacy.maxOverMean).toBeGreaterThan(3);
    expect(legacy.connectionsOpened).toBeLessThan(20);
    expect(result(report, 'apiserver-roundtrip').maxOverMean).toBeLessThan(1.1);
    expect(result(report, 'evenlb:round-robin').maxOverMean).toBeLessThan(1.01);
  });

  it('server-side recycling after 10 requests makes the legacy client dial, and spread', () => {
    const legacy = result(
      runRaw(trickle({ lifetime: { maxRequestsPerConnection: 10 } }), ['apiserver-legacy']),
      'apiserver-legacy',
    );
    expect(legacy.connectionsOpened).toBeGreaterThan(150);
    expect(legacy.maxOverMean).toBeLessThan(1.3);
  });

  it('legacy keeps sending to pods removed from the endpoints while they drain; round trip and evenlb never do', () => {
    const raw = {
      ...trickle({ terminationDrainMs: 30_000 }, [
        { type: 'rolling-update', atMs: 10_000, maxSurge: 1, maxUnavailable: 0 },
      ]),
      clients: { count: 3, connections: 3, arrival: { type: 'poisson', ratePerSecond: 20 } },
    };
    const report = runRaw(raw, ['apiserver-legacy', 'apiserver-roundtrip', 'evenlb:least-request']);
    expect(result(report, 'apiserver-legacy').requests.toRemovedPods).toBeGreaterThan(100);
    expect(result(report, 'apiserver-roundtrip').requests.toRemovedPods).toBe(0);
    expect(result(report, 'evenlb:least-request').requests.toRemovedPods).toBe(0);
  });

  it('webhook-burst: bursts through every model; per-request models stay even', async () => {
    const { runBuiltin } = await import('./support.js');
    const report = runBuiltin('webhook-burst', ['apiserver-legacy', 'apiserver-roundtrip', 'evenlb:least-request']);
    expect(result(report, 'apiserver-legacy').maxOverMean).toBeGreaterThan(
      result(report, 'apiserver-roundtrip').maxOverMean,
    );
    expect(result(report, 'apiserver-roundtrip').maxOverMean).toBeLessThan(1.05);
    // Bursts of 600 requests in 200 ms queue at the pods: p99 well above the 20 ms service time.
    expect(result(report, 'evenlb:least-request').latencyMs?.p99).toBeGreaterThan(40);
  });
});

describe('finite workloads', () => {
  it('a workload that ends before the rollout settles reports an empty window, not Infinity', () => {
    const raw = {
      name: 'short',
      pods: { count: 2, readyDelayMs: 5000 },
      clients: { count: 2, connections: 2, arrival: { type: 'periodic', ratePerSecond: 10, count: 5 } },
      events: [{ type: 'rolling-update', atMs: 100, maxSurge: 1, maxUnavailable: 0 }],
      measure: { from: 'settled' },
    };
    const report = runRaw(raw, ['iptables']);
    expect(Number.isFinite(report.window.fromMs)).toBe(true);
    expect(report.window.fromMs).toBe(report.window.toMs);
    expect(result(report, 'iptables').requests.window).toBe(0);
    expect(result(report, 'iptables').requests.sent).toBe(10);
  });
});
