/**
 * The shape of `Cluster.stats()` (and of each route in `BalancedAgent.stats()`): per endpoint
 * counters and state, and per cluster imbalance figures over a sliding window.
 */
import type { Imbalance } from '../metrics/imbalance.js';

/**
 * Where an endpoint stands:
 * - `eligible`: receives new requests;
 * - `ejected`: outlier detection keeps it out for now;
 * - `draining`: removed, not ready, or terminating while another is ready — in-flight requests
 *   and connections are finishing, no new request goes to it;
 * - `not-ready`: known to discovery, not eligible, nothing open to it.
 */
export type EndpointState = 'eligible' | 'ejected' | 'draining' | 'not-ready';

export interface EndpointStats {
  /** `ip:port`. */
  readonly key: string;
  readonly address: string;
  readonly port: number;
  readonly zone?: string;
  /** The Pod name, when discovery knows it. */
  readonly pod?: string;
  readonly state: EndpointState;
  /** Requests sent to this endpoint, ever (while it was known). */
  readonly requests: number;
  /** Requests sent within the stats window. */
  readonly windowRequests: number;
  readonly inFlight: number;
  /** Requests that ended in a 5xx or a transport failure. */
  readonly errors: number;
  /** Peak-EWMA latency estimate, ms. */
  readonly latencyMs: number;
  readonly openConnections: number;
  readonly idleConnections: number;
  /** Sockets opened to this endpoint, ever. */
  readonly connectionsOpened: number;
  /** Requests waiting for a connection (connection cap reached). */
  readonly queued: number;
  readonly timesEjected: number;
}

export interface ClusterStats {
  readonly name: string;
  readonly target: string;
  readonly mode: 'round-trip' | 'legacy';
  readonly policy: string;
  /** Discovery status: `pending`, `ok`, `not-found` or `degraded`. */
  readonly discovery: 'pending' | 'ok' | 'not-found' | 'degraded';
  /** Requests dispatched to the cluster, ever. */
  readonly requests: number;
  /** Extra attempts made (connect-failure and idempotent retries). */
  readonly retries: number;
  readonly inFlight: number;
  readonly errors: number;
  readonly endpoints: readonly EndpointStats[];
  /** Imbalance of `windowRequests` across eligible (and ejected) endpoints. */
  readonly window: { readonly windowMs: number; readonly imbalance: Imbalance };
}
