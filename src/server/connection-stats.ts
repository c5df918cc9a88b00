/**
 * What a server's connection registry reports: its counters (`ConnectionStats`, what
 * `recycleConnections(...).stats()` returns) and what a drain did (`DrainResult`), with the
 * drain's own options. Types only.
 */
import type { Clock } from '../core/clock.js';
import type { CloseReason } from '../pool/lifetime-policy.js';

/** Counters since the registry attached. */
export interface ConnectionStats {
  /** Connections open now. */
  readonly open: number;
  /** Connections accepted (HTTP/1 sockets and HTTP/2 sessions). */
  readonly opened: number;
  /** Connections closed, by reason. */
  readonly closed: Readonly<Record<CloseReason, number>>;
  /** Requests (HTTP/2: streams) handed to the application. */
  readonly requests: number;
  /** HTTP/1 requests pipelined behind a closing response, never handed to the application. */
  readonly droppedRequests: number;
  /** HTTP/2 streams opened after GOAWAY's last stream id, refused with REFUSED_STREAM. */
  readonly refusedStreams: number;
}

/** What a drain did. */
export interface DrainResult {
  /** Connections open when the drain started. */
  readonly connectionsAtStart: number;
  /** Requests in flight when the drain started. */
  readonly inFlightAtStart: number;
  /** Connections still open at the end of the grace, destroyed (their requests were cut). */
  readonly destroyed: number;
  /** True when the grace ended (or a forced stop came) before every connection had closed. */
  readonly timedOut: boolean;
  /** Clock milliseconds from the start of the drain to its end. */
  readonly elapsedMs: number;
}

export interface RegistryDrainOptions {
  readonly graceMs: number;
  readonly clock: Clock;
}
