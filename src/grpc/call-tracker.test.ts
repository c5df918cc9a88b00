import { describe, expect, it } from 'vitest';
import { LoadTracker } from '../balancing/endpoint-load.js';
import type { RequestOutcome } from '../cluster/cluster-options.js';
import { EndpointEntry } from '../cluster/endpoint-entry.js';
import { ManualClock } from '../core/clock.js';
import { createEndpoint } from '../core/endpoint.js';
import { DEFAULT_FAILURE_CODES } from './balancing-config.js';
import { type CallTicket, CallTracker, outcomeOf } from './call-tracker.js';

function setup() {
  const clock = new ManualClock(1000);
  const loads = new LoadTracker(clock);
  const endpoint = createEndpoint({ address: '10.0.0.1', port: 50051 });
  const entry = new EndpointEntry(endpoint);
  const ended: { key: string; outcome: RequestOutcome; ms: number }[] = [];
  const withdrawn: CallTicket[] = [];
  const tracker = new CallTracker(
    clock,
    100,
    DEFAULT_FAILURE_CODES,
    (t, outcome, ms) => ended.push({ key: t.key, outcome, ms }),
    (t) => withdrawn.push(t),
  );
  const load = loads.get(endpoint.key);
  const window = () => entry.window.sum(Math.floor(clock.now() / 100));
  return { clock, load, entry, tracker, ended, withdrawn, window, key: endpoint.key };
}

describe('outcomeOf', () => {
  const codes = new Set(DEFAULT_FAILURE_CODES);
  const cases: [number, RequestOutcome][] = [
    [0, 'success'],
    [1, 'aborted'],
    [3, 'success'], // INVALID_ARGUMENT: the application's answer, not the endpoint's fault
    [5, 'success'],
    [2, 'http-error'],
    [4, 'http-error'],
    [13, 'http-error'],
    [14, 'transport-error'],
    [15, 'http-error'],
  ];
  for (const [code, outcome] of cases)
    it(`status ${code} → ${outcome}`, () => expect(outcomeOf(code, codes)).toBe(outcome));
});

describe('CallTracker', () => {
  it('counts a call from its pick to its end, with latency and outcome', () => {
    const t = setup();
    const ticket = t.tracker.begin(t.key, t.load, t.entry);
    expect(t.load.inFlight).toBe(1);
    expect(t.window()).toBe(1);
    t.tracker.started(ticket);
    t.clock.advance(40);
    t.tracker.ended(ticket, 0);
    t.tracker.ended(ticket, 14); // a second end is ignored
    expect(t.load.inFlight).toBe(0);
    expect(t.load.successes).toBe(1);
    expect(t.load.errors).toBe(0);
    expect(t.ended).toEqual([{ key: t.key, outcome: 'success', ms: 40 }]);
    expect(t.tracker.requests).toBe(1);
  });

  it('takes back a pick that never started by the next timer turn (re-picked or ended before start)', () => {
    const t = setup();
    const started = t.tracker.begin(t.key, t.load, t.entry);
    t.tracker.begin(t.key, t.load, t.entry); // grpc-js re-picks: this one never starts
    t.tracker.started(started);
    expect(t.load.inFlight).toBe(2);
    t.clock.advance(0);
    expect(t.load.inFlight).toBe(1);
    expect(t.load.requests).toBe(1);
    expect(t.window()).toBe(1);
    expect(t.tracker.requests).toBe(1);
    expect(t.withdrawn).toHaveLength(1);
    t.tracker.ended(started, 0);
    expect(t.load.inFlight).toBe(0);
  });

  it('counts a withdrawn pick again when it starts late (slow call credentials)', () => {
    const t = setup();
    const ticket = t.tracker.begin(t.key, t.load, t.entry);
    t.clock.advance(5);
    expect(t.load.inFlight).toBe(0);
    t.tracker.started(ticket);
    expect(t.load.inFlight).toBe(1);
    expect(t.window()).toBe(1);
    t.clock.advance(10);
    t.tracker.ended(ticket, 14);
    expect(t.load.inFlight).toBe(0);
    expect(t.load.errors).toBe(1);
    expect(t.ended).toEqual([{ key: t.key, outcome: 'transport-error', ms: 10 }]);
  });

  it('an end without a start (grpc-js never calls it) changes nothing', () => {
    const t = setup();
    const ticket = t.tracker.begin(t.key, t.load, t.entry);
    t.tracker.close();
    t.tracker.ended(ticket, 0);
    expect(t.load.inFlight).toBe(0);
    expect(t.ended).toEqual([]);
  });
});
