/**
 * The dataplane contract. A dataplane decides which pod serves each request, at one of three
 * granularities, exactly where the real system decides:
 *
 * - `connection`: kube-proxy (iptables, nftables, IPVS) picks a pod when a connection is
 *   dialled; every request on that connection goes to the same pod.
 * - `pool`: kube-apiserver's legacy webhook client keeps idle connections keyed by the
 *   Service host name and picks a pod only when it has to dial.
 * - `request`: a pick per request (the apiserver's round-trip fix, evenlb's balancers).
 *
 * A dataplane builds a `RequestRouter` for one simulation; the simulation calls it for every
 * request and endpoint change.
 */
import type { SimClient } from '../model/sim-client.js';
import type { SimPod } from '../model/sim-pod.js';
import type { SimulationContext } from '../model/simulation-context.js';
import type { Scenario } from '../scenario/scenario-spec.js';

export type DataplaneGranularity = 'connection' | 'pool' | 'request';

/** What the simulation asks of a dataplane. */
export interface RequestRouter {
  /** The initial pods are ready: open the initial connections. */
  start(): void;
  /** Route request `slot` from `client`: `deliver` it now or later, or `fail` it. */
  send(client: SimClient, slot: number): void;
  /** The pod finished request `slot` (the slot is released after this returns). */
  done(slot: number): void;
  /** The eligible endpoints changed (a pod became ready, terminating or gone). */
  endpointsChanged(): void;
  /** `pod` is gone: it closes every connection it still has. */
  podGone(pod: SimPod): void;
}

export interface DataplaneModel {
  /** As in `--dataplanes`: `iptables`, `ipvs-lc`, `evenlb:least-request`, ... */
  readonly name: string;
  readonly description: string;
  readonly granularity: DataplaneGranularity;
  /**
   * `hash` for evenlb hash policies: they map request keys to pods, so their spread follows
   * the keys and the hash table, not the load; they are exempt from evenness targets.
   */
  readonly policyKind: 'load' | 'hash' | undefined;
  createRouter(context: SimulationContext): RequestRouter;
  /**
   * Rejects, before any simulation runs, a scenario this dataplane cannot model within bounds
   * (an `EVENLB_INVALID_OPTION` error naming the way out). Absent: every valid scenario runs.
   */
  check?(scenario: Scenario): void;
}
