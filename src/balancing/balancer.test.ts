import { describe, expect, it } from 'vitest';
import { type Clock, ManualClock } from '../core/clock.js';
import { EndpointSet } from '../core/endpoint-set.js';
import { ErrorCodes } from '../core/errors.js';
import { SeededRandom } from '../core/random.js';
import { Balancer, resolveLoadOptions } from './balancer.js';
import { defaultLoadOptions, LoadTracker } from './endpoint-load.js';
import type { Picker } from './picker.js';
import { roundRobinPolicy } from './policies/round-robin/round-robin-policy.js';
import { registerPolicy } from './policy.js';
import { endpointInputs, pickKey, seededBalancer } from './testing/fixtures.js';

describe('Balancer', () => {
  it('defaults to least-request and publishes "no-endpoints" before the first snapshot', () => {
    const b = new Balancer({ clock: new ManualClock(), random: new SeededRandom(1) });
    expect(b.policy.name).toBe('least-request');
    expect(b.endpointSet.size).toBe(0);
    expect(b.picker.pick()).toEqual({ type: 'none', reason: 'no-endpoints' });
  });

  it('rejects an unknown policy, listing the known ones', () => {
    expect(() => new Balancer({ policy: 'fastest' })).toThrow(
      expect.objectContaining({ code: ErrorCodes.UNKNOWN_POLICY, message: expect.stringContaining('round-robin') }),
    );
  });

  it('returns the diff of each update and publishes a new picker to listeners', () => {
    const { b } = seededBalancer('round-robin');
    const published: Picker[] = [];
    const off = b.onPicker((p) => published.push(p));
    const diff = b.update(EndpointSet.from(endpointInputs(3)));
    expect(diff.added).toHaveLength(3);
    const next = b.update(EndpointSet.from(endpointInputs(2, () => ({ weight: 2 }))));
    expect(next.removed.map((e) => e.key)).toEqual(['10.0.0.2:8443']);
    expect(next.changed).toHaveLength(2);
    b.setEjected(new Set(['10.0.0.0:8443']));
    expect(published).toHaveLength(3);
    expect(published[2]).toBe(b.picker);
    expect(b.picker.endpoints.map((t) => t.endpoint.key)).toEqual(['10.0.0.1:8443']);
    off();
    b.setEjected(new Set());
    expect(published).toHaveLength(3);
  });

  it('keeps load records across updates and drops removed ones once idle', () => {
    const { b } = seededBalancer('round-robin');
    b.update(EndpointSet.from(endpointInputs(3)));
    const [a, c] = [b.picker.endpoints[0]!.load, b.picker.endpoints[2]!.load];
    a.start();
    c.start();
    b.update(EndpointSet.from(endpointInputs(1)));
    // 10.0.0.0 stays; 10.0.0.2 is gone but still has a request in flight; 10.0.0.1 is pruned.
    expect(b.picker.endpoints[0]!.load).toBe(a);
    expect(b.loads.peek('10.0.0.2:8443')).toBe(c);
    expect(b.loads.peek('10.0.0.1:8443')).toBeUndefined();
  });

  it('gives policies the shared load tracker clock when no clock is given', () => {
    // Regression: policies got the system clock while the shared records ran on virtual time.
    const clock = new ManualClock(1e12);
    const seen: Clock[] = [];
    registerPolicy<undefined>({
      name: 'test-clock-probe',
      description: 'records the clock it is given',
      kind: 'load',
      parseOptions: () => undefined,
      create(_options, env) {
        seen.push(env.clock);
        return roundRobinPolicy.create({}, env);
      },
    });
    const loads = new LoadTracker(clock);
    new Balancer({ policy: 'test-clock-probe', loads, random: new SeededRandom(1) });
    expect(seen).toEqual([clock]);
  });

  it('retries an excluded endpoint on another one even for a policy that ignores exclude', () => {
    const { b } = seededBalancer('random', 1);
    b.update(EndpointSet.from(endpointInputs(2)));
    for (let i = 0; i < 200; i++) expect(pickKey(b.picker, { exclude: '10.0.0.0:8443' })).toBe('10.0.0.1:8443');
  });

  it('resolves load options: defaults, caller, policy', () => {
    expect(resolveLoadOptions(roundRobinPolicy, {}, undefined)).toEqual(defaultLoadOptions);
    expect(resolveLoadOptions(roundRobinPolicy, {}, { defaultRttMs: 5 })).toEqual({ defaultRttMs: 5, decayMs: 10_000 });
    expect(() => resolveLoadOptions(roundRobinPolicy, {}, { decayMs: 0 })).toThrow(
      'Balancer loadOptions: option "decayMs" must be a finite number > 0; received 0',
    );
    const b = new Balancer({ policy: 'round-robin', loadOptions: { decayMs: 500 }, clock: new ManualClock() });
    expect(b.loads.options).toEqual({ defaultRttMs: 30, decayMs: 500 });
  });
});
