/**
 * The engine hooks of a `Cluster` that only evenlb's own transports use — the node:http agent,
 * the proxy's HTTP/1.1, HTTP/2 and TCP paths, the gRPC policy — kept off the cluster's public
 * surface so that no user can knock a cluster out of step with its discovery (swap its
 * balancer's endpoints, count requests it never sent). `clusterInternals(cluster)` hands them
 * out; this module is never exported from a package entry point.
 *
 * A transport that moves its own bytes takes an `Attempt` per request (`acquire`, or `track`
 * for a request its socket already bound to an endpoint), reports the connections it opens
 * (`noteConnection`) and drains the endpoints that leave the eligible set
 * (`onEligibleChange`). The cluster's `Balancer` is here read-only in spirit: the cluster owns
 * its endpoints and ejections; transports read its picker.
 *
 * The cluster hands this module a reader of its private hooks once, from a static block (the
 * same pattern as `EndpointLoad`/`LoadTracker`), so a lookup is a private-field read.
 */
import type { Balancer } from '../balancing/balancer.js';
import type { Endpoint } from '../core/endpoint.js';
import { describeValue, type EvenlbError } from '../core/errors.js';
import type { CloseReason } from '../pool/lifetime-policy.js';
import type { Attempt } from './attempt.js';

/** What evenlb's own transports may do with a cluster. */
export interface ClusterInternals {
  /** The cluster's balancer: read its picker and endpoint set; the cluster alone updates it. */
  readonly balancer: Balancer;
  /**
   * True when the cluster's policy reads load reports: a transport then hands the
   * `endpoint-load-metrics` value of each response to `Attempt.end` (`httpAttemptResponse`,
   * `grpcAttemptResponse`); otherwise it need not look for it.
   */
  readonly readsReports: boolean;
  /**
   * Picks an endpoint for one request sent by another transport and starts its accounting:
   * the transport sends to `attempt.endpoint`, then calls `attempt.end(outcome)` once, or
   * `attempt.retry(failure, request)` for the next attempt under the cluster's retry policy.
   * `exclude` avoids one endpoint; `hash` is the affinity key for hash policies (`hashKey()`, a
   * TCP client's address), kept by the retries. Returns an `EvenlbError` (`EVENLB_NO_ENDPOINTS`,
   * `EVENLB_SERVICE_NOT_FOUND`, `EVENLB_DISCOVERY_PENDING`, `EVENLB_CLOSED`) when nothing can be picked.
   */
  acquire(exclude?: string, hash?: number): Attempt | EvenlbError;
  /**
   * Like `acquire`, for a transport that can use only some eligible endpoints right now (a gRPC
   * channel: those whose subchannel is connected). The balancer's own pick when `usable`;
   * otherwise the balancer asked again without it, and at last the first usable endpoint of
   * the balancer's picker (never an ejected or not-ready one). `undefined` when the balancer
   * offers endpoints but none is usable now: wait for one.
   */
  acquireUsable(usable: (endpointKey: string) => boolean, hash?: number): Attempt | EvenlbError | undefined;
  /** Starts accounting for a request already bound to `endpoint` (legacy mode: the socket's). */
  track(endpoint: Endpoint): Attempt;
  /** Picks an endpoint without accounting a request (the legacy, dial-time decision). */
  pickForConnection(exclude?: string, hash?: number): Endpoint | EvenlbError;
  /** Reports a connection another transport opened or closed to `endpointKey` (stats and metrics). */
  noteConnection(endpointKey: string, change: 'opened' | 'closed', reason?: CloseReason): void;
  /**
   * Counts a connection that was already open when this cluster took over its transport (a gRPC
   * channel's new config): open in stats, not reported to the observer as newly opened.
   */
  adoptConnection(endpointKey: string): void;
  /**
   * Calls `listener` with the eligible endpoint keys after every discovery update; a transport
   * drains its connections to endpoints that are not in the set. Returns an unsubscribe function.
   */
  onEligibleChange(listener: (eligible: ReadonlySet<string>) => void): () => void;
}

type Reader = (cluster: object) => ClusterInternals | undefined;

let read: Reader | undefined;

/** Called once, by the `Cluster` class's static block. */
export function exposeClusterInternals(reader: Reader): void {
  if (read !== undefined) throw new Error('cluster internals are already exposed');
  read = reader;
}

/**
 * The engine hooks of `cluster` (a `Cluster`). Throws a `TypeError` for anything else.
 *
 * @example
 * const attempt = clusterInternals(cluster).acquire();
 * if (!(attempt instanceof EvenlbError)) send(attempt.endpoint).then((ok) => attempt.end(ok ? 'success' : 'http-error'));
 */
export function clusterInternals(cluster: object): ClusterInternals {
  const internals = read?.(cluster);
  if (internals === undefined) {
    throw new TypeError(`clusterInternals: expected a Cluster; received ${describeValue(cluster)}`);
  }
  return internals;
}
