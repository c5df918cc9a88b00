/**
 * A fleet of 50 balancer replicas, each with its own production `Balancer` and load view,
 * learning of a scale-out (8 → 12 pods) at moments spread uniformly over 2 s. The report
 * gives the new pods' share per second after they are ready, as a multiple of their fair
 * share. What it must show:
 *
 * - round-robin is bounded: a replica that knows the new pods gives them exactly their turn,
 *   so their share climbs with the fraction of replicas that know (≈ 0.25, 0.75, then 1) and
 *   never exceeds fair share by more than noise (≤ 1.1 in every second);
 * - least-request herds: a new pod has zero requests in flight in every replica's view, so it
 *   wins every comparison it takes part in until it has caught up — in the first seconds the
 *   new pods get clearly more than round-robin gives them (≥ 1.2× round-robin's share) and,
 *   with no discovery spread (every replica at once), more than fair share (≥ 1.2×) in the
 *   first second;
 * - every replica eventually agrees: from the fourth second on, both are within 10% of fair;
 * - the herd is what least-request does without its herding guard (`herdingGuard: false`,
 *   as before the guard existed); with the guard on (the library's and the simulator's
 *   default) the first second with every replica at once stays within 10% of fair share.
 *
 * Also: with one balancer and no lag the discovery-lag machinery is inert (golden.test.ts),
 * and the same seed gives byte-identical output.
 */
import { describe, expect, it } from 'vitest';
import { formatReportJson } from '../../src/sim/report/report-json.js';
import type { SimDataplaneResult } from '../../src/sim/report/sim-report.js';
import { result, runBuiltin } from './support.js';

const dataplanes = ['evenlb:round-robin', 'evenlb:least-request'];

function ramp(r: SimDataplaneResult): number[] {
  const series = r.newPodsOverFair;
  if (series === null) throw new Error(`${r.dataplane}: no new-pod ramp`);
  expect(series.bucketMs).toBe(1000);
  return [...series.overFair];
}

describe('fleet-scale-out: 50 replicas, 2 s discovery spread', () => {
  const report = runBuiltin('fleet-scale-out', dataplanes, { trials: 3, herdingGuard: false });
  const rr = ramp(result(report, 'evenlb:round-robin'));
  const lr = ramp(result(report, 'evenlb:least-request'));

  it('reports the new pods’ share over fair for each of the first 10 s after ready', () => {
    expect(report.settings.clients.balancers).toBe(50);
    expect(rr).toHaveLength(10);
    expect(lr).toHaveLength(10);
    for (const r of report.results) expect(r.requests.failed).toBe(0);
  });

  it('round-robin: share climbs with the replicas that know, never above fair share (≤ 1.1)', () => {
    expect(rr[0]).toBeGreaterThan(0.1);
    expect(rr[0]).toBeLessThan(0.45);
    expect(rr[1]).toBeGreaterThan(0.6);
    expect(rr[1]).toBeLessThan(0.9);
    for (const v of rr) expect(v).toBeLessThanOrEqual(1.1);
  });

  it('least-request: new pods (zero in flight) get more than round-robin gives them in the first seconds', () => {
    expect(lr[0] as number).toBeGreaterThanOrEqual(1.2 * (rr[0] as number));
    expect(lr[1] as number).toBeGreaterThanOrEqual(1.15 * (rr[1] as number));
  });

  it('both settle within 10% of fair share from the fourth second on', () => {
    for (const v of [...rr.slice(3), ...lr.slice(3)]) expect(Math.abs(v - 1)).toBeLessThanOrEqual(0.1);
  });
});

describe('fleet-scale-out: every replica at once (no discovery spread)', () => {
  it('least-request without the herding guard overshoots fair share in the first second (the herd); round-robin does not', () => {
    const report = runBuiltin('fleet-scale-out', dataplanes, { trials: 3, discoverySpreadMs: 0, herdingGuard: false });
    expect(report.settings.clients.discoveryLag).toBeUndefined();
    const rr = ramp(result(report, 'evenlb:round-robin'));
    const lr = ramp(result(report, 'evenlb:least-request'));
    expect(lr[0]).toBeGreaterThanOrEqual(1.2);
    expect(rr[0]).toBeLessThanOrEqual(1.1);
    expect(rr[0]).toBeGreaterThanOrEqual(0.9);
  });
});

describe('fleet-scale-out: the herding guard (on by default)', () => {
  it('least-request with every replica at once: no herd, the first second within 10% of fair share', () => {
    const report = runBuiltin('fleet-scale-out', ['evenlb:least-request'], { trials: 3, discoverySpreadMs: 0 });
    const lr = ramp(result(report, 'evenlb:least-request'));
    expect(lr[0]).toBeLessThanOrEqual(1.1);
    expect(lr[0]).toBeGreaterThanOrEqual(0.9);
  });
});

describe('determinism', () => {
  it('same seed → byte-identical report with a fleet and discovery lag; another seed → different', () => {
    const a = formatReportJson(runBuiltin('fleet-scale-out', dataplanes, { windowMs: 5000 }, 4));
    const b = formatReportJson(runBuiltin('fleet-scale-out', dataplanes, { windowMs: 5000 }, 4));
    const c = formatReportJson(runBuiltin('fleet-scale-out', dataplanes, { windowMs: 5000 }, 5));
    expect(b).toBe(a);
    expect(c).not.toBe(a);
  });
});
