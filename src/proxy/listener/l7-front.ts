/**
 * What the request handlers of an L7 listener share (`L7Front`): its config, the per-request
 * state (routes, access log) swapped as a whole on reload, metrics, clock, the deadline sweep,
 * load reporting,
 * the client-certificate header, the access log, and what admission at `maxConnections` needs
 * to know (whether a connection is idle). The raw HTTP/1.1 data path, the node:http side and
 * the HTTP/2 side each take one.
 */
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Clock } from '../../core/clock.js';
import type { ProxyMetrics } from '../../metrics/proxy-metrics.js';
import type { ListenerConfig } from '../config/config-schema.js';
import type { RouteTable } from '../routing/route-table.js';
import type { ProxyCluster } from '../upstream/proxy-cluster.js';
import type { DeadlineSweep } from './deadline-sweep.js';
import type { ListenerLoad } from './listener-load.js';

/** What a listener reads per request; swapped as a whole on reload. */
export interface L7State {
  readonly routes: RouteTable<ProxyCluster>;
  readonly accessLog: boolean;
}

/** One access-log entry. */
export interface AccessEntry {
  readonly client: string | undefined;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly reason: string | undefined;
  readonly startMs: number;
  readonly cluster: string;
}

export interface L7Front {
  readonly config: ListenerConfig;
  readonly proto: 'http' | 'https';
  readonly metrics: ProxyMetrics;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly sweep: DeadlineSweep;
  /** Load reporting (`listeners[].loadReport`): each routed request is handed to it once; undefined = none. */
  readonly load: ListenerLoad | undefined;
  state(): L7State;
  /** `X-Forwarded-Client-Cert` for a connection of a mutual-TLS listener. */
  clientCert(socket: Socket | undefined): string | undefined;
  /** Writes an access-log line (call only when the access log is on). */
  access(entry: AccessEntry, version: '1.1' | '2'): void;
  /**
   * Tells admission at `maxConnections` how to see whether the connection of `socket` (TLS or
   * not) is idle, so that it may be closed to make room.
   */
  idleWhen(socket: Socket, isIdle: () => boolean): void;
}
