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

/**
 * What a dataplane counted over a whole run, besides routing: the traffic balancers exchange
 * with pods about load (evenlb dataplanes whose policies read load signals). All 0 when the
 * dataplane exchanges none.
 */
export interface DataplaneCounters {
  /** Load probes sent to pods (`prequal`): the run's probe traffic. */
  readonly probes: number;
  /** Probe answers that reached a balancer (probes to a pod gone by then get none). */
  readonly probeAnswers: number;
  /** Responses whose load report (`endpoint-load-metrics`) a balancer read. */
  readonly loadReports: number;
  /** Rejections (429/503) fed to balancers as pushback (`RequestRouter.rejected`). */
  readonly pushbacks: number;
}

/** The counters of a dataplane that exchanged no load signal. */
export const NO_COUNTERS: DataplaneCounters = Object.freeze({
  probes: 0,
  probeAnswers: 0,
  loadReports: 0,
  pushbacks: 0,
});

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
  /**
   * The pod rejected request `slot` (it answered 429 or 503 instead of serving it; the slot is
   * released after this returns). For pod models that shed load: evenlb dataplanes feed it to
   * the balancer as pushback. Absent: the dataplane does not care.
   */
  rejected?(slot: number): void;
  /** What the dataplane counted so far (read once the run ends); absent = nothing counted. */
  counters?(): DataplaneCounters;
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
