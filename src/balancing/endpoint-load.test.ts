import { describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import { EndpointSet } from '../core/endpoint-set.js';
import { ErrorCodes } from '../core/errors.js';
import { EndpointLoad, LoadTracker, loadIndices, parseLoadOptions } from './endpoint-load.js';

const options = { defaultRttMs: 30, decayMs: 1000 };

describe('EndpointLoad', () => {
  it('starts at the default RTT, not 0, with nothing in flight', () => {
    const load = new EndpointLoad('a', new ManualClock(500), options);
    expect(load.latencyMs()).toBe(30);
    expect(load.cost()).toBe(30);
    expect(load.inFlight).toBe(0);
  });

  it('counts requests, in flight, successes and errors', () => {
    const clock = new ManualClock();
    const load = new EndpointLoad('a', clock, options);
    const s1 = load.start();
    const s2 = load.start();
    expect(load.inFlight).toBe(2);
    expect(load.cost()).toBe(30 * 3);
    load.end(s1, false);
    load.end(s2, false);
    expect(load.consecutiveErrors).toBe(2);
    load.end(load.start(), true);
    expect(load).toMatchObject({ requests: 3, inFlight: 0, errors: 2, successes: 1, consecutiveErrors: 0 });
    load.end(0, true); // an unmatched end never drives in-flight negative
    expect(load.inFlight).toBe(0);
  });

  it('takes a peak at once', () => {
    const clock = new ManualClock();
    const load = new EndpointLoad('a', clock, options);
    const started = load.start();
    clock.advance(250);
    load.end(started, true);
    expect(load.latencyMs()).toBe(250);
  });

  it('blends a lower observation between it and the decayed estimate, more the longer the gap', () => {
    const clock = new ManualClock();
    const a = new EndpointLoad('a', clock, options);
    a.observe(200);
    clock.advance(100);
    const before = a.latencyMs(); // 200 e^-0.1
    a.observe(50);
    const short = a.latencyMs();
    expect(short).toBeLessThan(before);
    expect(short).toBeGreaterThan(50);
    expect(short).toBeCloseTo(before * Math.exp(-0.1) + 50 * (1 - Math.exp(-0.1)), 9);

    const b = new EndpointLoad('b', clock, options);
    b.observe(200);
    clock.advance(300); // still above 50 once decayed (200 e^-0.3 ≈ 148), so blended
    b.observe(50);
    // After a long gap the new observation dominates.
    expect(b.latencyMs()).toBeLessThan(short);
    expect(b.latencyMs()).toBeGreaterThan(50);
  });

  it('decays toward 0 while quiet, e-fold per decayMs', () => {
    const clock = new ManualClock();
    const load = new EndpointLoad('a', clock, options);
    load.observe(100);
    clock.advance(1000);
    expect(load.latencyMs()).toBeCloseTo(100 / Math.E, 9);
    clock.advance(1000);
    expect(load.latencyMs()).toBeCloseTo(100 / Math.E ** 2, 9);
    expect(load.latencyMs(clock.now() - 2000)).toBe(100); // read at the observation time
  });
});

describe('LoadTracker', () => {
  it('creates one record per key and prunes idle records of removed endpoints', () => {
    const tracker = new LoadTracker(new ManualClock(), options);
    const a = tracker.get('10.0.0.1:80');
    expect(tracker.get('10.0.0.1:80')).toBe(a);
    const busy = tracker.get('10.0.0.2:80');
    busy.start();
    tracker.get('10.0.0.3:80');
    tracker.prune(EndpointSet.from([{ address: '10.0.0.1', port: 80 }]));
    expect([...tracker.values()].map((l) => l.key)).toEqual(['10.0.0.1:80', '10.0.0.2:80']);
  });

  it('keeps a pruned record valid on its own: its index is reused without mixing figures', () => {
    const clock = new ManualClock();
    const tracker = new LoadTracker(clock, options);
    const old = tracker.get('10.0.0.1:80');
    const t0 = old.start();
    clock.advance(40);
    old.end(t0, false);
    tracker.prune(new Set<string>());
    expect(tracker.peek('10.0.0.1:80')).toBeUndefined();
    const fresh = tracker.get('10.0.0.2:80');
    expect(fresh.index).toBe(0); // the freed index, reused
    expect(old.tracker).not.toBe(tracker);
    // The old handle kept its figures and counts apart from the record now at its index.
    expect([old.requests, old.errors, old.consecutiveErrors, old.observations]).toEqual([1, 1, 1, 1]);
    expect(old.estimateMs).toBe(40);
    old.start();
    expect([old.inFlight, fresh.inFlight, fresh.requests, fresh.observations]).toEqual([1, 0, 0, 0]);
    expect(fresh.estimateMs).toBe(options.defaultRttMs);
  });

  it('index methods and handles read and write the same record, across growth', () => {
    const clock = new ManualClock(1000);
    const tracker = new LoadTracker(clock, options);
    const loads = Array.from({ length: 40 }, (_, i) => tracker.get(`10.0.0.${i}:80`));
    const a = loads[3]!;
    const startMs = tracker.startAt(a.index);
    a.start();
    expect(tracker.inFlightAt(a.index)).toBe(2);
    clock.advance(70);
    tracker.endAt(a.index, startMs, true);
    expect([a.inFlight, a.requests, a.successes, a.estimateMs, a.estimatedAtMs]).toEqual([1, 2, 1, 70, 1070]);
    expect(tracker.latencyAt(a.index, 1070)).toBe(a.latencyMs());
    expect(loadIndices(loads)?.indices).toEqual(Int32Array.from(loads, (l) => l.index));
    expect(loadIndices([a, new EndpointLoad('x', clock, options)])).toBeUndefined();
  });

  it('fills missing options with defaults and rejects bad ones', () => {
    expect(new LoadTracker(new ManualClock(), { decayMs: 50 }).options).toEqual({ defaultRttMs: 30, decayMs: 50 });
    expect(() => parseLoadOptions({ defaultRttMs: 0 })).toThrow(
      expect.objectContaining({
        code: ErrorCodes.INVALID_OPTION,
        message: 'load tracker: option "defaultRttMs" must be a finite number > 0; received 0',
      }),
    );
    expect(() => parseLoadOptions({ decay: 5 } as never)).toThrow(/unknown option "decay"/);
  });
});
