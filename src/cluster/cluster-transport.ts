/**
 * How a cluster reaches endpoints: one undici connector per scheme (TLS settings, connect
 * timeout, ALPN: http/1.1 only unless `allowH2`; h2c prior knowledge when `h2c`), the undici
 * Client options every connection shares, and the factory for endpoint pools (one per
 * endpoint) and legacy pools (one per Service origin, endpoint picked at dial time).
 */
import { buildConnector, type Client } from 'undici';
import type { Clock } from '../core/clock.js';
import type { Endpoint } from '../core/endpoint.js';
import type { EvenlbError } from '../core/errors.js';
import { EndpointPool, type EndpointPoolEvents } from '../pool/endpoint-pool.js';
import type { LifetimePolicy } from '../pool/lifetime-policy.js';
import type { ParsedClusterOptions } from './cluster-options.js';

type Pem = string | Buffer | (string | Buffer)[];

export class ClusterTransport {
  readonly #o: ParsedClusterOptions;
  readonly #lifetime: LifetimePolicy;
  readonly #clock: Clock;
  readonly #events: EndpointPoolEvents;
  #http: buildConnector.connector | undefined;
  #https: buildConnector.connector | undefined;

  constructor(options: ParsedClusterOptions, lifetime: LifetimePolicy, clock: Clock, events: EndpointPoolEvents) {
    this.#o = options;
    this.#lifetime = lifetime;
    this.#clock = clock;
    this.#events = events;
  }

  /** A pool for `scheme://ip:port` of one endpoint. */
  createPool(endpoint: Endpoint, https: boolean): EndpointPool {
    return new EndpointPool({
      origin: `${https ? 'https' : 'http'}://${endpoint.key}`,
      endpoint,
      ...this.#common(https),
    });
  }

  /** The legacy pool for a Service origin: `resolveEndpoint` picks when a connection is dialled. */
  createLegacyPool(origin: string, https: boolean, resolveEndpoint: () => Endpoint | EvenlbError): EndpointPool {
    return new EndpointPool({ origin, resolveEndpoint, ...this.#common(https) });
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
