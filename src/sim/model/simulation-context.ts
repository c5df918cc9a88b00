/**
 * What a dataplane's router may see and do inside a running simulation: the pods and
 * clients, the eligible endpoints (kube-proxy's rule: ready ones, else serving-terminating
 * ones, sorted by address), the connection manager, per-purpose random streams, the virtual
 * clock, and the two outcomes of routing a request — `deliver` it to a pod or `fail` it.
 * What the pods report of themselves (in flight, recent utilization and latency) is read from
 * the pods (`SimPod`); probes a dataplane sends to ask for it are counted through `probeSent`.
 */
import type { Endpoint } from '../../core/endpoint.js';
import type { EndpointSet } from '../../core/endpoint-set.js';
import type { SeededRandom } from '../../core/random.js';
import type { Scheduler } from '../engine/scheduler.js';
import type { VirtualClock } from '../engine/virtual-clock.js';
import type { Scenario } from '../scenario/scenario-spec.js';
import type { ConnectionManager } from './connection-manager.js';
import type { RequestTable } from './request-table.js';
import type { SimClient } from './sim-client.js';
import type { SimPod } from './sim-pod.js';

export interface SimulationStreams {
  /** kube-proxy and apiserver endpoint choices. */
  readonly dataplane: SeededRandom;
  /** Forked once per balancer. */
  readonly balancers: SeededRandom;
  /** Per-request hash keys (`hashKey: request`). */
  readonly requestKeys: SeededRandom;
  /** Discovery lags of a balancer fleet. */
  readonly discovery: SeededRandom;
}

export interface SimulationContext {
  readonly scenario: Scenario;
  readonly scheduler: Scheduler;
  readonly clock: VirtualClock;
  readonly requests: RequestTable;
  readonly pods: readonly SimPod[];
  readonly clients: readonly SimClient[];
  readonly connections: ConnectionManager;
  readonly streams: SimulationStreams;
  /** Ready pods, or serving-terminating ones when none is ready; sorted by address. */
  readonly eligiblePods: readonly SimPod[];
  /** The Service's endpoints as an EndpointSlice would list them now. */
  endpointSet(): EndpointSet;
  /** The pod behind an endpoint object published by `endpointSet()`. */
  podOf(endpoint: Endpoint): SimPod | undefined;
  /** Hands request `slot` to `pod` (it queues there if every worker is busy). */
  deliver(slot: number, pod: SimPod): void;
  /** Request `slot` could not be routed (no endpoint). */
  fail(slot: number): void;
  /**
   * The dataplane sent one load probe now (a question to a pod about its load, asked out of
   * band: Prequal's probes). Counted for the report (`probes.sent`, `probes.perRequest`); a
   * dataplane that never calls it reports 0.
   */
  probeSent(): void;
}
