import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../core/clock.js';
import { EndpointSet } from '../../../core/endpoint-set.js';
import { ErrorCodes } from '../../../core/errors.js';
import { SeededRandom } from '../../../core/random.js';
import { Balancer, resolveLoadOptions } from '../../balancer.js';
import { LoadTracker } from '../../endpoint-load.js';
import { endpointInputs, pickKey, pickKeys, seededBalancer } from '../../testing/fixtures.js';
import { peakEwmaPolicy } from './peak-ewma-policy.js';

describe('peak-ewma', () => {
  it('prefers the endpoint with the lower latency estimate', () => {
    const { b } = seededBalancer('peak-ewma');
    b.update(EndpointSet.from(endpointInputs(2)));
    const [slow, fast] = b.picker.endpoints;
    slow!.load.observe(100);
    fast!.load.observe(5);
    expect(new Set(pickKeys(b, 200))).toEqual(new Set([fast!.endpoint.key]));
  });

  it('weighs latency by requests in flight: cost = latency × (in-flight + 1)', () => {
    const { b } = seededBalancer('peak-ewma', 1, { defaultRttMs: 10 });
    b.update(EndpointSet.from(endpointInputs(2)));
    const [a, c] = b.picker.endpoints;
    a!.load.observe(20); // 20 × (0 + 1) = 20
    for (let i = 0; i < 2; i++) c!.load.start(); // 10 × (2 + 1) = 30
    expect(new Set(pickKeys(b, 100))).toEqual(new Set([a!.endpoint.key]));
    a!.load.start();
    a!.load.start(); // 20 × 3 = 60 > 30
    expect(new Set(pickKeys(b, 100))).toEqual(new Set([c!.endpoint.key]));
  });

  it('tries a slow endpoint again once its peak has decayed', () => {
    const { b, clock } = seededBalancer('peak-ewma', 1, { decayMs: 1000 });
    b.update(EndpointSet.from(endpointInputs(2)));
    const [slow, busy] = b.picker.endpoints;
    slow!.load.observe(300);
    busy!.load.observe(30);
    for (let i = 0; i < 3; i++) busy!.load.start(); // busy: 30 × 4 = 120 < 300
    expect(pickKeys(b, 1)[0]).toBe(busy!.endpoint.key);
    clock.advance(2000); // slow: 300 e^-2 ≈ 41; busy: 30 e^-2 × 4 ≈ 16 — still busy
    expect(pickKeys(b, 1)[0]).toBe(busy!.endpoint.key);
    busy!.load.observe(30); // a fresh 30 ms answer: busy 30 × 4 = 120 > 41
    expect(pickKeys(b, 1)[0]).toBe(slow!.endpoint.key);
  });

  it('picks what EndpointLoad.cost(now) ranks lower, without reading the clock', () => {
    // 300 random pairs: estimates observed at different times, different requests in flight.
    const random = new SeededRandom(99);
    for (let trial = 0; trial < 300; trial++) {
      const { b, clock } = seededBalancer('peak-ewma', trial, { decayMs: 500 });
      b.update(EndpointSet.from(endpointInputs(2)));
      const [x, y] = b.picker.endpoints;
      x!.load.observe(1 + random.int(200));
      clock.advance(random.int(2000));
      y!.load.observe(1 + random.int(200));
      for (let i = random.int(4); i > 0; i--) x!.load.start();
      for (let i = random.int(4); i > 0; i--) y!.load.start();
      clock.advance(random.int(3000));
      const [cx, cy] = [x!.load.cost(), y!.load.cost()];
      if (Math.abs(cx / cy - 1) < 1e-9) continue; // a tie: either is right
      expect(pickKey(b.picker)).toBe(cx < cy ? x!.endpoint.key : y!.endpoint.key);
    }
  });

  it('applies defaultRttMs and decayMs to the balancer load tracker', () => {
    const { b } = seededBalancer('peak-ewma', 1, { defaultRttMs: 50, decayMs: 2000 });
    expect(b.loads.options).toEqual({ defaultRttMs: 50, decayMs: 2000 });
    b.update(EndpointSet.from(endpointInputs(1)));
    expect(b.picker.endpoints[0]!.load.latencyMs()).toBe(50);
  });

  it('starts an endpoint added later at defaultRttMs, not at 0 and not decayed', () => {
    const { b, clock } = seededBalancer('peak-ewma', 1, { defaultRttMs: 40 });
    b.update(EndpointSet.from(endpointInputs(2)));
    clock.advance(60_000);
    b.update(EndpointSet.from(endpointInputs(3)));
    const added = b.picker.endpoints[2]!.load;
    expect(added.latencyMs()).toBe(40);
    expect(added.cost()).toBe(40);
  });

  it('rejects a load option set differently in loadOptions and in the policy options', () => {
    const make = (loadOptions: object) =>
      new Balancer({ policy: 'peak-ewma', policyOptions: { decayMs: 2000 }, loadOptions, clock: new ManualClock() });
    expect(() => make({ decayMs: 5000 })).toThrow(
      expect.objectContaining({
        code: ErrorCodes.INVALID_OPTION,
        message: expect.stringMatching(/peak-ewma policy option "decayMs" is 2000 but loadOptions.decayMs is 5000/),
      }),
    );
    expect(make({ decayMs: 2000, defaultRttMs: 15 }).loads.options).toEqual({ decayMs: 2000, defaultRttMs: 15 });
  });

  it('checks its load options against a shared load tracker', () => {
    const clock = new ManualClock();
    const loads = new LoadTracker(clock, { decayMs: 3000 });
    const random = new SeededRandom(1);
    expect(() => new Balancer({ policy: 'peak-ewma', policyOptions: { decayMs: 2000 }, loads, random })).toThrow(
      /the shared load tracker/,
    );
    const b = new Balancer({ policy: 'peak-ewma', policyOptions: { decayMs: 3000 }, loads, random });
    expect(b.loads).toBe(loads);
  });

  it('declares only the load options the caller set', () => {
    const policy = peakEwmaPolicy;
    expect(policy.loadOptions?.(policy.parseOptions({}))).toEqual({});
    expect(resolveLoadOptions(policy, policy.parseOptions({ defaultRttMs: 7 }), { decayMs: 100 })).toEqual({
      defaultRttMs: 7,
      decayMs: 100,
    });
  });

  it.each([{ defaultRttMs: 0 }, { decayMs: -1 }, { defaultRttMs: 'fast' }])('rejects %o', (options) => {
    expect(() => peakEwmaPolicy.parseOptions(options)).toThrow(
      expect.objectContaining({
        code: ErrorCodes.INVALID_OPTION,
        message: expect.stringContaining('peak-ewma policy'),
      }),
    );
  });
});
