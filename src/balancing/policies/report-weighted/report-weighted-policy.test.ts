import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../core/clock.js';
import { EndpointSet } from '../../../core/endpoint-set.js';
import { ErrorCodes } from '../../../core/errors.js';
import { SeededRandom } from '../../../core/random.js';
import { Balancer } from '../../balancer.js';
import type { LoadReport } from '../../load-report.js';
import { endpointInputs, pickKeys, tally } from '../../testing/fixtures.js';
import { reportWeightedPolicy } from './report-weighted-policy.js';
import { reportWeight } from './report-weights.js';

function setup(n: number, policyOptions?: unknown): { b: Balancer; clock: ManualClock; keys: string[] } {
  const clock = new ManualClock();
  const b = new Balancer({ policy: 'report-weighted', policyOptions, clock, random: new SeededRandom(3) });
  b.update(EndpointSet.from(endpointInputs(n)));
  return { b, clock, keys: b.endpointSet.endpoints.map((e) => e.key) };
}

/** Each endpoint reports `reports[i]` (undefined: nothing) every 100 ms for `forMs`. */
function reportFor(b: Balancer, clock: ManualClock, reports: (LoadReport | undefined)[], forMs: number): void {
  for (let t = 0; t < forMs; t += 100) {
    b.picker.endpoints.forEach((e, i) => {
      const r = reports[i];
      if (r !== undefined) e.load.report(r);
    });
    clock.advance(100);
  }
}

/** Share of picks per endpoint over `count` picks, in key order. */
function shares(b: Balancer, keys: string[], count = 7000): number[] {
  const c = tally(pickKeys(b, count));
  return keys.map((k) => (c.get(k) ?? 0) / count);
}

const weights = (b: Balancer): number[] => b.weights().map((w) => w.weight);

describe('report-weighted', () => {
  it.each([
    { qps: 100, utilization: 0.5, eps: 0, penalty: 1, expected: 200 },
    { qps: 100, utilization: 0.25, eps: 0, penalty: 1, expected: 400 },
    { qps: 100, utilization: 0.5, eps: 50, penalty: 1, expected: 100 },
    { qps: 100, utilization: 0.5, eps: 50, penalty: 0, expected: 200 },
    { qps: 100, utilization: 0.5, eps: 50, penalty: 2, expected: 200 / 3 },
    { qps: 0, utilization: 0.5, eps: 0, penalty: 1, expected: 0 },
    { qps: 100, utilization: 0, eps: 0, penalty: 1, expected: 0 },
    { qps: Number.NaN, utilization: 0.5, eps: Number.NaN, penalty: 1, expected: 0 },
    { qps: 100, utilization: 0.5, eps: Number.NaN, penalty: 1, expected: 200 },
  ])('weight(qps $qps, utilization $utilization, eps $eps, penalty $penalty) = $expected', (c) => {
    expect(reportWeight(c.qps, c.utilization, c.eps, c.penalty)).toBeCloseTo(c.expected, 9);
  });

  it('splits picks by capacity after the blackout: 2 : 4 : 1 for weights 200, 400 and 100 (errors)', () => {
    const { b, clock, keys } = setup(3);
    const reports: LoadReport[] = [
      { rpsFractional: 100, applicationUtilization: 0.5 },
      { rpsFractional: 100, cpuUtilization: 0.25 },
      { rpsFractional: 100, applicationUtilization: 0.5, eps: 50 },
    ];
    reportFor(b, clock, reports, 11_000);
    const got = shares(b, keys);
    for (const [i, want] of [2 / 7, 4 / 7, 1 / 7].entries()) expect(Math.abs(got[i]! / want - 1)).toBeLessThan(0.01);
  });

  it('keeps a newcomer at the mean weight during its blackout, then applies its reports', () => {
    const { b, clock } = setup(3, { blackoutPeriodMs: 5000 });
    // 0 and 1 are established (weights 200 and 400) when 2 starts reporting 800.
    reportFor(
      b,
      clock,
      [
        { rpsFractional: 100, cpuUtilization: 0.5 },
        { rpsFractional: 100, cpuUtilization: 0.25 },
      ],
      6000,
    );
    const reports: LoadReport[] = [
      { rpsFractional: 100, cpuUtilization: 0.5 },
      { rpsFractional: 100, cpuUtilization: 0.25 },
      { rpsFractional: 100, cpuUtilization: 0.125 },
    ];
    reportFor(b, clock, reports, 4500);
    let w = weights(b);
    expect(w[2]! / w[0]!).toBeCloseTo(1.5, 9);
    reportFor(b, clock, reports, 1600);
    w = weights(b);
    expect(w[2]! / w[0]!).toBeCloseTo(4, 9);
  });

  it('takes the reports at once when every endpoint is in its blackout (a start)', () => {
    const { b, clock } = setup(2, { blackoutPeriodMs: 5000 });
    reportFor(
      b,
      clock,
      [
        { rpsFractional: 100, cpuUtilization: 0.5 },
        { rpsFractional: 100, cpuUtilization: 0.125 },
      ],
      1100,
    );
    const [a, c] = weights(b);
    expect(c! / a!).toBeCloseTo(4, 9);
  });

  it('gives an endpoint without reports, or with expired ones, the mean weight', () => {
    const { b, clock } = setup(3, { blackoutPeriodMs: 0, weightExpirationPeriodMs: 3000 });
    // 0 and 1 report weights 100 and 300; 2 never reports: it takes their mean, 200.
    reportFor(
      b,
      clock,
      [
        { rpsFractional: 50, cpuUtilization: 0.5 },
        { rpsFractional: 150, cpuUtilization: 0.5 },
      ],
      2000,
    );
    let w = weights(b);
    expect(w[1]! / w[0]!).toBeCloseTo(3, 9);
    expect(w[2]! / w[0]!).toBeCloseTo(2, 9);
    // 1 stops reporting; 3 s later its weight expires and it takes the mean of those left (0's).
    reportFor(b, clock, [{ rpsFractional: 50, cpuUtilization: 0.5 }], 3500);
    w = weights(b);
    expect(w).toEqual([w[0], w[0], w[0]]);
  });

  it('recomputes weights only every weightUpdatePeriodMs', () => {
    const { b, clock } = setup(2, { blackoutPeriodMs: 0, weightUpdatePeriodMs: 2000 });
    reportFor(
      b,
      clock,
      [
        { rpsFractional: 100, cpuUtilization: 0.5 },
        { rpsFractional: 100, cpuUtilization: 0.5 },
      ],
      2100,
    );
    expect(weights(b)).toEqual([1, 1]);
    // 1 now reports twice the capacity; the weights follow at the next update, not before.
    const start = clock.now();
    let changedAt = Number.NaN;
    for (let t = 0; t < 2500 && Number.isNaN(changedAt); t += 100) {
      reportFor(
        b,
        clock,
        [
          { rpsFractional: 100, cpuUtilization: 0.5 },
          { rpsFractional: 100, cpuUtilization: 0.25 },
        ],
        100,
      );
      if (weights(b)[1] !== 1) changedAt = clock.now() - start;
    }
    expect(changedAt).toBeGreaterThan(1000);
    expect(changedAt).toBeLessThanOrEqual(2300);
  });

  it('bounds weights to maxWeightRatio around the mean', () => {
    const { b, clock } = setup(2, { blackoutPeriodMs: 0, maxWeightRatio: 3 });
    reportFor(
      b,
      clock,
      [
        { rpsFractional: 100, cpuUtilization: 0.01 },
        { rpsFractional: 100, cpuUtilization: 1 },
      ],
      1100,
    );
    // Weights 10,000 and 100, mean 5,050: 1.98× the mean stays, 0.0198× is raised to 1/3.
    const [a, c] = weights(b);
    expect(a! / c!).toBeCloseTo((10_000 / 5_050) * 3, 9);
  });

  it("without any report it is weighted round robin over the endpoints' own weights", () => {
    const clock = new ManualClock();
    const b = new Balancer({ policy: 'report-weighted', clock, random: new SeededRandom(2) });
    b.update(EndpointSet.from(endpointInputs(3, (i) => ({ weight: i + 1 }))));
    clock.advance(5000);
    const c = tally(pickKeys(b, 600));
    for (const [i, e] of b.endpointSet.endpoints.entries()) {
      expect(Math.abs(c.get(e.key)! - 100 * (i + 1))).toBeLessThanOrEqual(1);
    }
  });

  it.each([
    {
      options: { weightUpdatePeriodMs: 50 },
      message: 'option "weightUpdatePeriodMs" must be a finite number >= 100; received 50',
    },
    { options: { maxWeightRatio: 0.5 }, message: 'option "maxWeightRatio" must be a finite number >= 1; received 0.5' },
    {
      options: { blackoutPeriodMs: -1 },
      message: 'option "blackoutPeriodMs" must be a finite number >= 0; received -1',
    },
  ])('rejects $options naming the field', ({ options, message }) => {
    expect(() => reportWeightedPolicy.parseOptions(options)).toThrow(
      expect.objectContaining({ code: ErrorCodes.INVALID_OPTION, message: `report-weighted policy: ${message}` }),
    );
  });
});
