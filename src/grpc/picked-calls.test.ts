/**
 * A gRPC call is one attempt of its channel's `Cluster`, from grpc-js's pick to its end: counted
 * from the pick (load, window, requests), ended once with the shared gRPC outcome rule, taken
 * back when grpc-js never starts it, counted again when it starts late. On a `ManualClock`.
 */
import { describe, expect, it } from 'vitest';
import type { Attempt } from '../cluster/attempt.js';
import { Cluster } from '../cluster/cluster.js';
import { clusterInternals } from '../cluster/cluster-internals.js';
import { DEFAULT_GRPC_FAILURE_CODES } from '../cluster/grpc-outcome.js';
import { ManualClock } from '../core/clock.js';
import { SeededRandom } from '../core/random.js';
import { StaticEndpointSource } from '../discovery/static-endpoint-source.js';
import { PickedCalls } from './picked-calls.js';

const KEY = '10.0.0.1:50051';

function setup(failureCodes: readonly number[] = DEFAULT_GRPC_FAILURE_CODES) {
  const clock = new ManualClock(1000);
  const ended: string[] = [];
  const cluster = new Cluster({
    name: 'grpc',
    target: new StaticEndpointSource([{ address: '10.0.0.1', port: 50051 }]),
    outlierDetection: false,
    statsWindowMs: 1000,
    clock,
    random: new SeededRandom(1),
    observer: { requestEnded: (_c, key, outcome, ms) => ended.push(`${key} ${outcome} ${ms}`) },
  });
  const internals = clusterInternals(cluster);
  const settled: string[] = [];
  const calls = new PickedCalls(internals, clock, failureCodes, (key) => settled.push(key));
  const endpoint = () => cluster.stats().endpoints.find((e) => e.key === KEY);
  const pick = () => calls.picked(internals.acquire() as Attempt);
  return { clock, cluster, calls, ended, settled, endpoint, pick };
}

describe('PickedCalls', () => {
  it('counts a call from its pick to its end, with latency and outcome, once', () => {
    const t = setup();
    const call = t.pick();
    expect(t.endpoint()?.inFlight).toBe(1);
    expect(t.endpoint()?.windowRequests).toBe(1);
    t.calls.started(call);
    t.clock.advance(40);
    t.calls.ended(call, 0);
    t.calls.ended(call, 14); // a second end is ignored
    expect(t.endpoint()).toMatchObject({ inFlight: 0, requests: 1, errors: 0, windowRequests: 1 });
    expect(t.ended).toEqual([`${KEY} success 40`]);
    expect(t.cluster.stats().requests).toBe(1);
    expect(t.settled).toEqual([KEY]);
  });

  it('takes back a pick that never started by the next timer turn (re-picked or ended before start)', () => {
    const t = setup();
    const started = t.pick();
    t.pick(); // grpc-js re-picks: this one never starts
    t.calls.started(started);
    expect(t.endpoint()?.inFlight).toBe(2);
    t.clock.advance(0);
    expect(t.endpoint()).toMatchObject({ inFlight: 1, requests: 1, windowRequests: 1 });
    expect(t.cluster.stats().requests).toBe(1);
    expect(t.settled).toEqual([KEY]);
    t.calls.ended(started, 0);
    expect(t.endpoint()?.inFlight).toBe(0);
    expect(t.ended).toHaveLength(1);
  });

  it('counts a withdrawn pick again when it starts late (slow call credentials)', () => {
    const t = setup();
    const call = t.pick();
    t.clock.advance(5);
    expect(t.endpoint()).toMatchObject({ inFlight: 0, requests: 0, windowRequests: 0 });
    t.calls.started(call);
    expect(t.endpoint()).toMatchObject({ inFlight: 1, requests: 1, windowRequests: 1 });
    t.clock.advance(10);
    t.calls.ended(call, 14);
    expect(t.endpoint()).toMatchObject({ inFlight: 0, errors: 1 });
    expect(t.ended).toEqual([`${KEY} transport-error 10`]);
    expect(t.cluster.stats().requests).toBe(1);
  });

  it('an end without a start (grpc-js never calls it) changes nothing', () => {
    const t = setup();
    const call = t.pick();
    t.calls.close();
    t.calls.ended(call, 0);
    expect(t.endpoint()).toMatchObject({ inFlight: 0, requests: 0 });
    expect(t.cluster.stats().requests).toBe(0);
    expect(t.ended).toEqual([]);
  });

  it("a channel's failureCodes decide what counts as the endpoint's failure", () => {
    const t = setup([14]);
    const internal = t.pick();
    t.calls.started(internal);
    t.calls.ended(internal, 13);
    const unavailable = t.pick();
    t.calls.started(unavailable);
    t.calls.ended(unavailable, 14);
    expect(t.ended).toEqual([`${KEY} success 0`, `${KEY} transport-error 0`]);
    expect(t.endpoint()?.errors).toBe(1);
  });
});
