import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../core/clock.js';
import { EndpointSet } from '../../core/endpoint-set.js';
import { SeededRandom } from '../../core/random.js';
import { Balancer } from '../balancer.js';
import { endpointInputs, pickKeys, tally } from '../testing/fixtures.js';
import { FleetHarness, type FleetPod } from '../testing/fleet-harness.js';
import { parseSlowStartOptions, slowStartFactor } from './slow-start.js';

const o = (windowMs: number, aggression = 1, minWeightPercent = 10) => ({ windowMs, aggression, minWeightPercent });

describe('slowStartFactor (Envoy: max(minWeight, timeFactor^(1/aggression)))', () => {
  it.each([
    { elapsed: 0, opts: o(20_000), want: 0.1 },
    { elapsed: 1000, opts: o(20_000), want: 0.1 },
    { elapsed: 5000, opts: o(20_000), want: 0.25 },
    { elapsed: 10_000, opts: o(20_000), want: 0.5 },
    { elapsed: 20_000, opts: o(20_000), want: 1 },
    { elapsed: 5000, opts: o(20_000, 2), want: 0.5 },
    { elapsed: 5000, opts: o(20_000, 0.5), want: 0.1 },
    { elapsed: 10_000, opts: o(20_000, 0.5), want: 0.25 },
    { elapsed: 0, opts: o(20_000, 1, 0), want: 1 / 20_000 },
    { elapsed: 0, opts: o(0), want: 1 },
  ])('$elapsed ms into $opts.windowMs ms (aggression $opts.aggression): $want', ({ elapsed, opts, want }) => {
    expect(slowStartFactor(elapsed, opts)).toBeCloseTo(want, 9);
  });

  it('parses options with defaults and names a bad field', () => {
    expect(parseSlowStartOptions({ windowMs: 20_000 })).toEqual(o(20_000));
    expect(() => parseSlowStartOptions({ windowMs: -1 })).toThrow(/"windowMs" must be a finite number >= 0/);
    expect(() => parseSlowStartOptions({ aggression: 0 })).toThrow(/aggression/);
  });
});

const fleetPod = (i: number): FleetPod => ({
  input: { address: `10.0.1.${i + 1}`, port: 8443 },
  workers: 4,
  serviceMs: 20,
  exponential: true,
});

/** 4 pods, then 4 more ready at 10 s; the new pods' share per second after ready, as a fraction of fair. */
function rampShares(policy: string, windowMs: number): number[] {
  const clock = new ManualClock();
  const random = new SeededRandom(3);
  const balancers = Array.from(
    { length: 4 },
    () => new Balancer({ policy, clock, random: random.fork(), slowStart: { windowMs } }),
  );
  const fleet = new FleetHarness(clock, balancers, random.fork());
  const pods = Array.from({ length: 8 }, (_, i) => fleetPod(i));
  fleet.setPods(pods.slice(0, 4));
  fleet.run(10_000, () => 100);
  fleet.setPods(pods);
  fleet.run(40_000, () => 100);
  const shares: number[] = [];
  for (let s = 10; s < 40; s++) {
    let fresh = 0;
    for (const p of pods.slice(4)) fresh += fleet.count(`${p.input.address}:8443`, s);
    shares.push(fresh / (fleet.total(s) / 2));
  }
  for (const b of balancers) b.close();
  return shares;
}

describe('slow start in the Balancer', () => {
  it.each(['least-request', 'peak-ewma', 'random', 'weighted-round-robin'])(
    '%s: new pods ramp over a 20 s window (<= 40% of fair in 2 s, >= 90% by 25 s); without it, full share within 2 s',
    (policy) => {
      const ramp = rampShares(policy, 20_000);
      expect(Math.max(ramp[0] as number, ramp[1] as number)).toBeLessThanOrEqual(0.4);
      expect(ramp[10] as number).toBeGreaterThan(ramp[1] as number);
      // Per-second shares carry Poisson noise: judge 5-second means.
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      expect(mean(ramp.slice(25, 30))).toBeGreaterThanOrEqual(0.9);
      const none = rampShares(policy, 0);
      expect(mean(none.slice(2, 7))).toBeGreaterThanOrEqual(0.9);
      expect(none[1] as number).toBeGreaterThanOrEqual(0.8);
    },
  );

  it('restarts the ramp when an endpoint becomes ready again and when it returns from ejection', () => {
    const clock = new ManualClock();
    const b = new Balancer({ policy: 'random', clock, random: new SeededRandom(1), slowStart: { windowMs: 10_000 } });
    const inputs = endpointInputs(4);
    b.update(EndpointSet.from(inputs));
    const slowOf = (key: string) => b.weights().find((w) => w.key === key)?.slowStart;
    expect(slowOf('10.0.0.0:8443')).toBe(1); // the first snapshot is taken as warm
    b.update(EndpointSet.from(inputs.map((e, i) => (i === 0 ? { ...e, conditions: { ready: false } } : e))));
    clock.advance(1000);
    b.update(EndpointSet.from(inputs));
    clock.advance(5000);
    expect(slowOf('10.0.0.0:8443')).toBeCloseTo(0.5, 1);
    clock.advance(6000);
    expect(slowOf('10.0.0.0:8443')).toBe(1);
    b.setEjected(new Set(['10.0.0.1:8443']));
    clock.advance(3000);
    b.setEjected(new Set());
    clock.advance(2500);
    expect(slowOf('10.0.0.1:8443')).toBeCloseTo(0.25, 1);
    // Picks follow the ramp: about 0.25 / 3.25 of them.
    const counts = tally(pickKeys(b, 40_000));
    expect((counts.get('10.0.0.1:8443') ?? 0) / 40_000).toBeCloseTo(0.25 / 3.25, 1);
    b.close();
  });

  it('republishes the picker on the tick only while a ramp moves, and close() stops the tick', () => {
    const clock = new ManualClock();
    const b = new Balancer({ policy: 'least-request', clock, slowStart: { windowMs: 1000 }, weightRefreshMs: 100 });
    const inputs = endpointInputs(3);
    b.update(EndpointSet.from(inputs.slice(0, 2)));
    let published = 0;
    b.onPicker(() => published++);
    b.update(EndpointSet.from(inputs));
    const picker = b.picker;
    expect(b.picker).toBe(picker); // no rebuild per read or per pick
    clock.advance(1500);
    const afterRamp = published;
    expect(afterRamp).toBeGreaterThan(5);
    expect(afterRamp).toBeLessThanOrEqual(12);
    clock.advance(5000);
    expect(published).toBe(afterRamp);
    b.update(EndpointSet.from(inputs.slice(0, 2)));
    b.update(EndpointSet.from(inputs));
    b.close();
    const closedAt = published;
    clock.advance(5000);
    expect(published).toBe(closedAt);
  });
});
