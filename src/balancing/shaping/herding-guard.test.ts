import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../core/clock.js';
import { EndpointSet } from '../../core/endpoint-set.js';
import { SeededRandom } from '../../core/random.js';
import { Balancer } from '../balancer.js';
import { EndpointLoad } from '../endpoint-load.js';
import { endpointInputs } from '../testing/fixtures.js';
import { FleetHarness, type FleetPod } from '../testing/fleet-harness.js';
import { guardDrawWeight, medianLatencyMs, parseHerdingGuardOptions } from './herding-guard.js';

const pod = (i: number): FleetPod => ({
  input: { address: `10.0.0.${i + 1}`, port: 8443 },
  workers: 1_000_000,
  serviceMs: 2000,
});

/**
 * 12 client replicas (each its own Balancer and load view) send 100 requests/s each to 9 pods
 * answering in 2 s; a 10th pod becomes ready at 5 s. Returns the new pod's requests per second
 * over seconds 5..14, as multiples of its fair share (1/10 of all requests that second).
 */
function newPodShares(policy: string, herdingGuard: false | undefined, seed = 1): number[] {
  const clock = new ManualClock();
  const random = new SeededRandom(seed);
  const balancers = Array.from(
    { length: 12 },
    () => new Balancer({ policy, clock, random: random.fork(), ...(herdingGuard === false ? { herdingGuard } : {}) }),
  );
  const fleet = new FleetHarness(clock, balancers, random.fork());
  const pods = Array.from({ length: 10 }, (_, i) => pod(i));
  fleet.setPods(pods.slice(0, 9));
  fleet.run(5000, () => 100);
  fleet.setPods(pods);
  fleet.run(15_000, () => 100);
  const key = '10.0.0.10:8443';
  const shares: number[] = [];
  for (let s = 5; s < 15; s++) shares.push(fleet.count(key, s) / (fleet.total(s) / 10));
  for (const b of balancers) b.close();
  return shares;
}

describe('herding guard', () => {
  it('parses: defaults, false switches it off, unknown keys are rejected', () => {
    expect(parseHerdingGuardOptions(undefined)).toEqual({ maxShareMultiple: 1.5, minResponses: 10, seedLatency: true });
    expect(parseHerdingGuardOptions(false)).toBe(false);
    expect(() => parseHerdingGuardOptions({ maxShare: 2 })).toThrow(/unknown option "maxShare"/);
    expect(() => parseHerdingGuardOptions({ maxShareMultiple: 0.5 })).toThrow(/maxShareMultiple/);
  });

  it.each([
    { d: 2, guarded: 1, others: 19 },
    { d: 2, guarded: 4, others: 4 },
    { d: 2, guarded: 1, others: 4 },
    { d: 3, guarded: 2, others: 30 },
  ])(
    'caps the always-winning share at 1.5x fair: d=$d, $guarded new among $others others',
    ({ d, guarded, others }) => {
      const g = guardDrawWeight(1.5, d, guarded, others);
      expect(g).toBeGreaterThan(0);
      expect(g).toBeLessThanOrEqual(1);
      // Monte Carlo: draw d distinct candidates by weight; guarded ones always win.
      const random = new SeededRandom(5);
      const weights = [...Array<number>(guarded).fill(g), ...Array<number>(others).fill(1)];
      let first = 0;
      const trials = 100_000;
      for (let t = 0; t < trials; t++) {
        const drawn = new Set<number>();
        while (drawn.size < d) {
          let total = 0;
          for (let i = 0; i < weights.length; i++) if (!drawn.has(i)) total += weights[i] as number;
          let r = random.next() * total;
          for (let i = 0; i < weights.length; i++) {
            if (drawn.has(i)) continue;
            r -= weights[i] as number;
            if (r <= 0) {
              drawn.add(i);
              break;
            }
          }
        }
        if (drawn.has(0)) first++;
      }
      expect(first / trials).toBeLessThanOrEqual((1.5 / (guarded + others)) * 1.03);
    },
  );

  it('seeds latency from the median of endpoints with history', () => {
    const clock = new ManualClock();
    const loads = [40, 100, 60, 80].map((ms, i) => {
      const l = new EndpointLoad(`k${i}`, clock);
      l.end(l.start() - ms, true);
      return l;
    });
    loads.push(new EndpointLoad('fresh', clock));
    expect(medianLatencyMs(loads)).toBe(70);
    const fresh = loads[4] as EndpointLoad;
    fresh.seed(70);
    expect(fresh.estimateMs).toBe(70);
    fresh.end(fresh.start() - 5, true);
    fresh.seed(500);
    expect(fresh.estimateMs).toBeLessThan(500);
  });

  it.each(['least-request', 'peak-ewma'])(
    '%s: the guard lifts at the response that ends it, with no tick in between',
    (policy) => {
      const clock = new ManualClock();
      const b = new Balancer({ policy, clock, random: new SeededRandom(3) });
      const inputs = endpointInputs(4);
      b.update(EndpointSet.from(inputs.slice(0, 3)));
      // The old endpoints carry requests, so the new one (nothing in flight) looks free.
      for (const e of b.picker.endpoints) for (let i = 0; i < 2; i++) e.load.start();
      b.update(EndpointSet.from(inputs));
      const fresh = b.loads.get('10.0.0.3:8443');
      const state = () => b.weights().find((w) => w.key === '10.0.0.3:8443');
      const oldWeight = b.weights()[0]?.weight as number;
      expect(state()?.guarded).toBe(true);
      expect(state()?.weight).toBeLessThan(oldWeight);
      const published: number[] = [];
      b.onPicker(() => published.push(clock.now()));
      for (let i = 0; i < 9; i++) fresh.end(fresh.start(), true);
      expect(state()?.guarded).toBe(true);
      fresh.end(fresh.start(), false);
      expect(state()?.guarded).toBe(false);
      expect(state()?.weight).toBe(oldWeight);
      expect(published).toEqual([0]);
      b.close();
    },
  );

  it.each(['least-request', 'peak-ewma'])(
    '%s, 12 balancers: a new pod’s busiest second stays <= 1.5x fair with the guard; the herd shows without it',
    (policy) => {
      const on = newPodShares(policy, undefined);
      const off = newPodShares(policy, false);
      expect(Math.max(...on)).toBeLessThanOrEqual(1.5);
      expect(Math.max(...off)).toBeGreaterThan(1.6);
      // The guard lifts as history builds: the new pod is at its fair share a few seconds later.
      const late = on.slice(5);
      expect(late.reduce((a, b) => a + b, 0) / late.length).toBeGreaterThan(0.9);
    },
  );
});
