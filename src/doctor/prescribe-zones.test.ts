/**
 * A zone skew prescribed with the observed zones: the simulated scenario places the pods in
 * their zones and the clients where the traffic comes from, and every per-request cure reports
 * how much of its balance it buys by crossing zones — against the closed form for zone-unaware
 * picks (a client in zone z lands outside it with probability 1 − pods(z)/pods).
 */
import { describe, expect, it } from 'vitest';
import type { ObservedPod } from './kube-reader.js';
import { loadFigures } from './load-figures.js';
import type { LoadReading } from './load-reading.js';
import { prescribe } from './prescribe.js';

const NOW = Date.parse('2026-12-01T00:00:00Z');

function figures(rows: readonly (readonly [rps: number, zone: string | undefined])[]) {
  const pods: ObservedPod[] = rows.map(([, zone], i) => ({
    name: `p${i}`,
    ready: true,
    node: undefined,
    zone,
    createdAtMs: NOW - 600 * 60_000,
    readyAtMs: NOW - 600 * 60_000 + 5000,
    restarts: 0,
    revision: 'a',
    cpuRequestMillis: 500,
    annotations: {},
  }));
  const reading: LoadReading = {
    source: 'test',
    metric: 'm',
    connectionsMetric: undefined,
    pods: new Map(rows.map(([rps], i) => [`p${i}`, { requestsPerSecond: rps, connections: 8 }])),
    earlier: new Map(rows.map(([rps], i) => [`p${i}`, rps])),
    windowMs: 10_000,
  };
  return loadFigures(pods, reading, NOW);
}

// Two pods in zone a carry three times the load of the four in zone b (topology-aware routing).
const SKEWED = [
  [50, 'zone-b'],
  [150, 'zone-a'],
  [52, 'zone-b'],
  [148, 'zone-a'],
  [49, 'zone-b'],
  [51, 'zone-b'],
] as const;

describe('zone-skew prescriptions', { timeout: 60_000 }, () => {
  const p = prescribe({
    cause: 'zone-skew',
    figures: figures(SKEWED),
    namespace: 'prod',
    name: 'web',
    dataplane: 'iptables',
    target: 1.2,
    seed: 1,
  });
  if (p === null) throw new Error('no prescription');

  it('simulates the observed zones: pods per zone and each zone’s share of the requests', () => {
    for (const cure of [p.asIs, ...p.cures].filter((c) => c.simulation !== null)) {
      const s = cure.simulation!.scenario as { pods: { zones?: number[] }; clients: { zones?: number[] } };
      expect(s.pods.zones, cure.id).toEqual([2, 4]);
      // zone-a: 298 of 500 req/s.
      expect(s.clients.zones?.[0], cure.id).toBeCloseTo(0.596, 3);
      expect(s.clients.zones?.[1], cure.id).toBeCloseTo(0.404, 3);
    }
    expect(p.assumptions.join('\n')).toMatch(/zones as observed \(zone-a 2 pods, 60% of requests; zone-b 4 pods, 40%/);
  });

  it('per-request cures report the requests they send across zones, as the closed form says', () => {
    // Zone-unaware picks: 0.596 × 4/6 + 0.404 × 2/6 = 0.532 of requests leave their zone.
    const closedForm = 0.596 * (4 / 6) + 0.404 * (2 / 6);
    const perRequest = p.cures.filter((c) => ['balanced-agent', 'grpc-plugin', 'proxy'].includes(c.id));
    expect(perRequest).toHaveLength(3);
    for (const cure of perRequest) {
      const cross = cure.predicted!.crossZone!;
      expect(cross / closedForm, cure.id).toBeGreaterThan(0.9);
      expect(cross / closedForm, cure.id).toBeLessThan(1.1);
      expect(cure.predicted!.maxOverMean, cure.id).toBeLessThan(1.2);
      expect(cure.note, cure.id).toContain(`${Math.round(cross * 100)}% of requests served in another zone`);
      expect(cure.note, cure.id).toMatch(/topology spread constraints/);
    }
    expect(p.asIs.note).toMatch(
      /without topology-aware routing, so this figure does not show the zone skew \(\d+% of its requests cross zones\)/,
    );
  });

  it('without zones on every pod, no zones are simulated and no cross-zone figure is reported', () => {
    const partial = prescribe({
      cause: 'zone-skew',
      figures: figures(SKEWED.map(([rps, zone], i) => [rps, i === 0 ? undefined : zone] as const)),
      namespace: 'prod',
      name: 'web',
      dataplane: 'iptables',
      target: 1.2,
      seed: 1,
    })!;
    const agent = partial.cures.find((c) => c.id === 'balanced-agent')!;
    expect((agent.simulation!.scenario as { pods: { zones?: number[] } }).pods.zones).toBeUndefined();
    expect(agent.predicted!.crossZone).toBeNull();
    expect(agent.note).toMatch(/assumes clients may reach every zone/);
  });
});
