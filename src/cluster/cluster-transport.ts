/**
 * How a cluster reaches endpoints over undici: one connector per scheme (TLS settings, connect
 * timeout, ALPN: http/1.1 only unless `allowH2`; h2c prior knowledge when `h2c`), the undici
 * Client options every connection shares, and the pools themselves — one `EndpointPool` per
 * endpoint and scheme (so one `connectionsPerEndpoint` cap), and in legacy mode one per Service
 * origin with the endpoint picked at dial time. It is the cluster's `EndpointTransport`.
 */
import { buildConnector, type Client } from 'undici';
import type { Clock } from '../core/clock.js';
import type { Endpoint } from '../core/endpoint.js';
import type { EvenlbError } from '../core/errors.js';
import type { Random } from '../core/random.js';
import { EndpointPool, type EndpointPoolEvents } from '../pool/endpoint-pool.js';
import { type CloseReason, LifetimePolicy } from '../pool/lifetime-policy.js';
import type { EndpointTransport } from './attempt.js';
import type { ParsedClusterOptions } from './cluster-options.js';

type Pem = string | Buffer | (string | Buffer)[];

/** What the cluster hears about sockets; `known` is false for a legacy pool's not-yet-dialled origin. */
export interface ConnectionEvents {
  opened(key: string, known: boolean): void;
  closed(key: string, known: boolean, reason: CloseReason): void;
}

interface EndpointPools {
  http?: EndpointPool;
  https?: EndpointPool;
}

export class ClusterTransport implements EndpointTransport<EndpointPool, [https: boolean]> {
  readonly #o: ParsedClusterOptions;
  readonly #pools = new Map<string, EndpointPools>();
  readonly #legacy = new Map<string, EndpointPool>();
  readonly #lifetime: LifetimePolicy;
  readonly #clock: Clock;
  readonly #events: EndpointPoolEvents;
  #http: buildConnector.connector | undefined;
  #https: buildConnector.connector | undefined;

  /** `events` hear of every socket opened and closed (the endpoint's key, or the legacy pool's origin). */
  constructor(options: ParsedClusterOptions, random: Random, clock: Clock, events: ConnectionEvents) {
    this.#o = options;
    this.#lifetime = new LifetimePolicy(
      {
        maxRequestsPerConnection: options.maxRequestsPerConnection,
        maxConnectionAgeMs: options.maxConnectionAgeMs,
        ageJitter: options.ageJitter,
        idleTimeoutMs: options.idleTimeoutMs,
      },
      random,
      `cluster ${options.name}`,
    );
    this.#clock = clock;
    this.#events = {
      onConnectionOpen: (pool, conn) => events.opened(conn.endpoint?.key ?? pool.origin, conn.endpoint !== undefined),
      onConnectionClose: (pool, conn, reason) =>
        events.closed(conn.endpoint?.key ?? pool.origin, conn.endpoint !== undefined, reason),
    };
  }

  /** The pool for `scheme://ip:port` of `endpoint`; a new one when there is none or it drains. */
  connectionFor(endpoint: Endpoint, https: boolean): EndpointPool {
    let pools = this.#pools.get(endpoint.key);
    if (pools === undefined) {
      pools = {};
      this.#pools.set(endpoint.key, pools);
    }
    const existing = https ? pools.https : pools.http;
    if (existing !== undefined && !existing.draining) return existing;
    const pool = new EndpointPool({
      origin: `${https ? 'https' : 'http'}://${endpoint.key}`,
      endpoint,
      ...this.#common(https),
    });
    if (https) pools.https = pool;
    else pools.http = pool;
    return pool;
  }

  /** Drains the endpoint's pools: no new requests, idle sockets close now, in-flight ones finish. */
  drainEndpoint(endpointKey: string): void {
    for (const pool of this.poolsOf(endpointKey)) pool.drain('endpoint-removed');
  }

  /** The endpoint's pools (per scheme). */
  poolsOf(endpointKey: string): EndpointPool[] {
    const pools = this.#pools.get(endpointKey);
    const out: EndpointPool[] = [];
    if (pools?.http !== undefined) out.push(pools.http);
    if (pools?.https !== undefined) out.push(pools.https);
    return out;
  }

  /**
   * True while a pool of the endpoint still has queued requests or open connections, or a
   * legacy pool still uses a connection to it (legacy mode keeps using endpoints discovery dropped).
   */
  busy(endpointKey: string): boolean {
    for (const pool of this.poolsOf(endpointKey)) {
      if (pool.queued > 0) return true;
      for (const c of pool.connections()) if (!c.closed) return true;
    }
    for (const pool of this.#legacy.values()) {
      for (const c of pool.connections()) if (!c.closed && c.endpoint?.key === endpointKey) return true;
    }
    return false;
  }

  /** Forgets an endpoint whose pools are done (see `busy`). */
  forget(endpointKey: string): void {
    this.#pools.delete(endpointKey);
  }

  /** The legacy pool for a Service origin: `resolveEndpoint` picks when a connection is dialled. */
  legacyPool(origin: string, https: boolean, resolveEndpoint: () => Endpoint | EvenlbError): EndpointPool {
    let pool = this.#legacy.get(origin);
    if (pool === undefined) {
      pool = new EndpointPool({ origin: new URL(origin).origin, resolveEndpoint, ...this.#common(https) });
      this.#legacy.set(origin, pool);
    }
    return pool;
  }

  legacyPools(): IterableIterator<EndpointPool> {
    return this.#legacy.values();
  }

  /** Graceful: every pool lets its requests finish, then closes. */
  async close(): Promise<void> {
    await Promise.all(this.#all().map((p) => p.close()));
  }

  /** Abrupt: every pool fails its requests with `err`. */
  async destroy(err?: Error): Promise<void> {
    await Promise.all(this.#all().map((p) => p.destroy(err)));
  }

  #all(): EndpointPool[] {
    const out = [...this.#legacy.values()];
    for (const key of this.#pools.keys()) out.push(...this.poolsOf(key));
    return out;
  }

  #common(https: boolean) {
    const o = this.#o;
    return {
      lifetime: this.#lifetime,
      clock: this.#clock,
      maxConnections: o.connectionsPerEndpoint,
      connector: this.#connector(https),
      maxConcurrentStreams: o.maxConcurrentStreams,
      clientOptions: this.#clientOptions(https),
      events: this.#events,
    };
  }

  #connector(https: boolean): buildConnector.connector {
    const existing = https ? this.#https : this.#http;
    if (existing !== undefined) return existing;
    const o = this.#o;
    const tls = o.tls;
    const connector = buildConnector({
      timeout: o.connectTimeoutMs,
      ...(https
        ? {
            allowH2: o.allowH2,
            rejectUnauthorized: tls?.rejectUnauthorized ?? true,
            ...(tls?.ca === undefined ? {} : { ca: tls.ca as Pem }),
            ...(tls?.cert === undefined ? {} : { cert: tls.cert as Pem }),
            ...(tls?.key === undefined ? {} : { key: tls.key as Pem }),
            ...(tls?.servername === undefined ? {} : { servername: tls.servername }),
          }
        : { useH2c: o.h2c }),
    } as buildConnector.BuildOptions);
    if (https) this.#https = connector;
    else this.#http = connector;
    return connector;
  }

  #clientOptions(https: boolean): Client.Options {
    const o = this.#o;
    return {
      allowH2: https ? o.allowH2 : o.h2c,
      maxConcurrentStreams: o.maxConcurrentStreams,
      ...(o.headersTimeoutMs === undefined ? {} : { headersTimeout: o.headersTimeoutMs }),
      ...(o.bodyTimeoutMs === undefined ? {} : { bodyTimeout: o.bodyTimeoutMs }),
      // Our own idle timer retires connections at idleTimeoutMs; undici's keep-alive must not beat it.
      ...(o.idleTimeoutMs === undefined
        ? {}
        : { keepAliveTimeout: o.idleTimeoutMs * 2, keepAliveMaxTimeout: Math.max(o.idleTimeoutMs * 2, 600_000) }),
    };
  }
}
