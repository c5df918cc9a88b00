/**
 * What a connection on the proxy's HTTP/1.1 data path needs from its listener (`Http1Context`),
 * and the deadlines it can be closed by.
 */

export type { AccessEntry } from '../listener/l7-front.js';

import type { Socket } from 'node:net';
import type { Clock } from '../../core/clock.js';
import type { ProxyMetrics } from '../../metrics/proxy-metrics.js';
import type { LifetimePolicy } from '../../pool/lifetime-policy.js';
import type { ListenerLimits } from '../config/config-schema.js';
import type { AccessEntry, L7State } from '../listener/l7-front.js';
import type { ListenerLoad } from '../listener/listener-load.js';

/** What a downstream connection (`Conn`, the data path's `Http1Downstream`) needs from its listener. */
export interface Http1Context<Conn = unknown> {
  readonly listener: string;
  readonly proto: 'http' | 'https';
  readonly limits: ListenerLimits;
  /** `listeners[].trustForwardedHeaders`: keep the client's forwarding headers. */
  readonly trustForwarded: boolean;
  readonly metrics: ProxyMetrics;
  readonly clock: Clock;
  /** Load reporting (`listeners[].loadReport`), read once per connection; undefined = none. */
  readonly load: ListenerLoad | undefined;
  /** Downstream recycling (`listeners[].recycle`); undefined = connections live on. */
  readonly recycle: LifetimePolicy | undefined;
  state(): L7State;
  /** `X-Forwarded-Client-Cert` for the socket's verified client certificate, if any. */
  clientCert(socket: Socket): string | undefined;
  /** Gives the socket (and the bytes read but not handled) to the listener's `node:http` server. */
  handoff(socket: Socket, pending: Buffer | undefined): void;
  /** Writes an access-log line (called only when the access log is on). */
  access(entry: AccessEntry): void;
  /** The connection is done with this data path (closed or handed off). */
  released(conn: Conn): void;
  /** Counts a connection the proxy closed itself, by the deadline that closed it. */
  deadline(reason: DeadlineReason): void;
}

/** The deadlines a client connection can be closed by (the `reason` of `evenlb_proxy_downstream_closed_total`). */
export type DeadlineReason =
  | 'first-byte'
  | 'tls-handshake'
  | 'request-head'
  | 'request-body'
  | 'request'
  | 'idle'
  | 'h2-idle'
  | 'h2-ping'
  | 'connection-limit';
