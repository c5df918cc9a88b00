/**
 * Zones and reconnects per minute, against what they must be by construction.
 *
 * zone-skew: pods 4-4-3 over three zones, clients 50/30/20. A zone-unaware dataplane spreads
 * requests evenly over pods whatever the client's zone, so a request stays in its zone with
 * probability Σ clients_z × pods_z / 11 = (0.5·4 + 0.3·4 + 0.2·3) / 11 = 0.345: 65.5% cross
 * zones, and each zone's pods get pods_z / 11 of the requests.
 *
 * Reconnects: with a client maximum connection age T (±10% jitter), each of C connections is
 * re-dialled once per T on average: C × 60 s / T per minute; pinned connections without limits
 * reconnect never; per-request dataplanes do not model connections (null).
 */
import { describe, expect, it } from 'vitest';
import { result, runBuiltin } from './support.js';

describe('zone-skew', () => {
  it('reports zones 4-4-3 with shares ∝ pods and 65.5% of requests across zones (± 0.03) for zone-unaware dataplanes', () => {
    const report = runBuiltin('zone-skew', ['iptables', 'evenlb:round-robin', 'evenlb:least-request']);
    for (const r of report.results) {
      expect(r.zones?.map((z) => [z.zone, z.pods])).toEqual([
        ['zone-a', 4],
        ['zone-b', 4],
        ['zone-c', 3],
      ]);
      const perRequest = r.granularity === 'request';
      for (const z of r.zones ?? []) {
        expect(Math.abs(z.share - z.pods / 11), `${r.dataplane} ${z.zone}`).toBeLessThanOrEqual(
          perRequest ? 0.02 : 0.1,
        );
      }
      expect(Math.abs((r.crossZone as number) - (1 - 3.8 / 11)), r.dataplane).toBeLessThanOrEqual(0.03);
      expect(r.pods.every((p) => p.zone !== null)).toBe(true);
    }
    expect(result(report, 'iptables').reconnectsPerMinute).toBe(0);
  });

  it('without zones, zone figures are null', () => {
    const r = result(runBuiltin('steady', ['iptables'], { windowMs: 5000 }), 'iptables');
    expect(r.zones).toBeNull();
    expect(r.crossZone).toBeNull();
    expect(r.pods[0]?.zone).toBeNull();
  });
});

describe('reconnects per minute', () => {
  it('client max age 30 s over 2,000 connections: ≈ 4,000 per minute (± 10%); per-request dataplanes: null', () => {
    const report = runBuiltin('steady', ['iptables', 'evenlb:round-robin'], {
      connections: 2000,
      clients: 100,
      ratePerSecond: 2,
      maxConnectionAgeMs: 30_000,
      windowMs: 120_000,
    });
    const iptables = result(report, 'iptables').reconnectsPerMinute as number;
    expect(Math.abs(iptables / 4000 - 1)).toBeLessThanOrEqual(0.1);
    expect(result(report, 'evenlb:round-robin').reconnectsPerMinute).toBeNull();
  });
});
