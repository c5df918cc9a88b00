/**
 * What a connection on the proxy's HTTP/1.1 data path needs from its listener (`Http1Context`),
 * and the access-log entry it hands back.
 */
import type { Socket } from 'node:net';
import type { Clock } from '../../core/clock.js';
import type { ProxyMetrics } from '../../metrics/proxy-metrics.js';
import type { LifetimePolicy } from '../../pool/lifetime-policy.js';
import type { ListenerLimits } from '../config-schema.js';
import type { L7State } from '../l7-listener.js';
import type { Http1Downstream } from './downstream-connection.js';

/** What a downstream connection needs from its listener. */
export interface Http1Context {
  readonly listener: string;
  readonly proto: 'http' | 'https';
  readonly limits: ListenerLimits;
  /** `listeners[].trustForwardedHeaders`: keep the client's forwarding headers. */
  readonly trustForwarded: boolean;
  readonly metrics: ProxyMetrics;
  readonly clock: Clock;
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
  released(conn: Http1Downstream): void;
}

export interface AccessEntry {
  readonly client: string | undefined;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly reason: string | undefined;
  readonly startMs: number;
  readonly cluster: string;
}
