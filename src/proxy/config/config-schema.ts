/**
 * The `evenlb proxy` configuration: its TypeScript shape and the JSON schema (draft-07, for
 * ajv) that validates a YAML or JSON file once at load and at every reload. Listeners accept
 * traffic (`http`: HTTP/1.1 and h2c prior knowledge on one port; `https`: TLS with ALPN h2 and
 * http/1.1; `tcp`: L4), clusters name a target URI and how to balance and talk to it, routes
 * map a host and a path prefix to a cluster. A cluster's fields that are `Cluster` options are
 * not declared here: their schema, defaults and mapping come from the cluster spec through the
 * table in `cluster-config-fields.ts`; only the proxy's own cluster fields are. Likewise a
 * listener's connection limits (`recycle.maxRequestsPerConnection`, `recycle.maxConnectionAgeMs`,
 * a `tcp` listener's `maxConnectionAgeMs`) take their type and schema from the recycler's spec
 * entries. Other defaults live in `proxy-config.ts`.
 */

import { type FieldSpec, type Input, type JsonSchema, specSchema } from '../../core/options.js';
import type { FairShareOptions } from '../../server/fair-share/fair-share-options.js';
import { recyclerOptionsSpec } from '../../server/recycler-options.js';
import { type SameNameClusterConfig, sharedClusterSchema } from './cluster-config-fields.js';
import { type ListenerLoadReport, listenerLoadReportSchema } from './listener-load-report.js';

export type ListenerProtocol = 'http' | 'https' | 'tcp';

/**
 * A listener's limits: every state of a client connection has a deadline (defaults in
 * `proxy-config.ts`, documented in docs/proxy.md), every resource a bound.
 */
export interface ListenerLimits {
  /** Largest request head (request line + headers) in bytes; larger → 431. */
  readonly maxHeaderBytes: number;
  /** Most header fields in a request; more → 431. */
  readonly maxHeaderCount: number;
  /** From accept to the first byte — for h2c the whole connection preface — ms; default 10 s. */
  readonly firstByteTimeoutMs: number;
  /** `https`: from accept to a finished TLS handshake, ms; default 10 s. */
  readonly tlsHandshakeTimeoutMs: number;
  /** Time to receive a complete request head, ms. */
  readonly headersTimeoutMs: number;
  /** Time for a whole request (head and body) from the client, ms; 0 = none. */
  readonly requestTimeoutMs: number;
  /** Longest wait between two reads of a request body, ms; default 60 s; 0 = none. */
  readonly bodyReadTimeoutMs: number;
  /** Idle keep-alive connection timeout, ms. */
  readonly idleTimeoutMs: number;
  /** An HTTP/2 session with no open stream closes (GOAWAY) after this long, ms; default 60 s. */
  readonly h2IdleTimeoutMs: number;
  /** A PING on every HTTP/2 session this often, ms; default 30 s; 0 = none. */
  readonly h2PingIntervalMs: number;
  /** A session whose PING is not answered within this long is closed, ms; default 10 s. */
  readonly h2PingTimeoutMs: number;
  /**
   * Most concurrent client connections; default derived from the process's open-file limit
   * (`defaultMaxConnections`); 0 = unlimited. At the limit the oldest idle connection is
   * closed to make room, and when none is idle the new connection is refused.
   */
  readonly maxConnections: number;
}

/**
 * The connection limits of a listener's `recycle`, taken from the recycler's spec: the same
 * names, checks, meaning and JSON schema as `recycleConnections(server, { ... })`, which the
 * listener runs them with (and the data path's `LifetimePolicy`). Only these two are offered
 * in a file; the rest of the recycler's options keep their defaults.
 */
export const listenerRecycleLimitsSpec = {
  maxRequestsPerConnection: recyclerOptionsSpec.maxRequestsPerConnection,
  maxConnectionAgeMs: recyclerOptionsSpec.maxConnectionAgeMs,
};

/** Downstream connection recycling: push clients back through kube-proxy / the proxy's own balancer. */
export interface ListenerRecycle extends Readonly<Input<typeof listenerRecycleLimitsSpec>> {
  /**
   * Fair-share shedding: the options of `recycleConnections(server, { fairShare })`
   * (`fairShareSpec`, validated with it at load), with `loadPort` required — a replica serves
   * the load exchange on that port and asks its peers on it.
   */
  readonly fairShare?: ListenerFairShare;
}

/** `recycle.fairShare` as a file can say it: the recycler's `FairShareOptions` with a target URI for `peers`. */
export type ListenerFairShare = Omit<FairShareOptions, 'peers' | 'logger'> & { readonly peers: string };

/** An `https` listener's certificates (PEM file paths). */
export interface ListenerTlsConfig {
  /** The certificate served when no `sni` entry matches the client's server name. */
  readonly cert: string;
  readonly key: string;
  /** More certificates, chosen by the TLS server name: exact names or `*.suffix` (one label). */
  readonly sni?: readonly { readonly serverNames: readonly string[]; readonly cert: string; readonly key: string }[];
  /** When set, clients must present a certificate signed by this CA (mutual TLS). */
  readonly clientCa?: string;
}

export interface ListenerConfig {
  readonly name: string;
  /** `host:port` (IPv6 as `[::1]:port`). */
  readonly address: string;
  readonly protocol: ListenerProtocol;
  /** PEM files for `https`. */
  readonly tls?: ListenerTlsConfig;
  /** `tcp` only: the cluster connections are balanced over. */
  readonly cluster?: string;
  /** `tcp` only: `least-connections` (proxy-wide) or `maglev` (client address hash). */
  readonly balance?: 'least-connections' | 'maglev';
  /**
   * `tcp` only: close a connection at this age (±10% jitter) so it reconnects through the
   * balancer; the lifetime spec's `maxConnectionAgeMs` (its type and schema).
   */
  readonly maxConnectionAgeMs?: ListenerRecycle['maxConnectionAgeMs'];
  readonly limits: ListenerLimits;
  readonly recycle?: ListenerRecycle;
  /**
   * `http`/`https`: report the load of what this listener fronts (the ORCA header on responses,
   * `inFlight`/`latencyMs` to load probes); see `listener-load-report.ts`. Unset: no reporting.
   */
  readonly loadReport?: ListenerLoadReport;
  /**
   * `http`/`https`: trust the client's forwarding headers (`X-Forwarded-*`, `Forwarded`,
   * `X-Real-IP`) because every client is a proxy the operator controls. Default false: they
   * are removed and the proxy writes its own (see hop-headers.ts).
   */
  readonly trustForwardedHeaders: boolean;
}

export interface ClusterTlsConfig {
  /** PEM CA bundle to verify endpoints; default: the system roots. */
  readonly ca?: string;
  /** TLS server name (and certificate name) to verify, e.g. `svc.ns.svc`. */
  readonly servername?: string;
  readonly rejectUnauthorized: boolean;
}

/**
 * A normalized `clusters[]` entry. The shared fields spelled as `Cluster` options are spelled
 * (`policy`, `slowStartMs`, `herdingGuard`, ...) come from the cluster spec through
 * `SameNameClusterConfig`; the ones below are the proxy's own or spelled differently (see the
 * table in `cluster-config-fields.ts`).
 */
export interface ClusterConfig extends SameNameClusterConfig {
  readonly name: string;
  /** Target URI: `static:///`, `dns:///`, `k8s:///`, `file:///`. */
  readonly target: string;
  readonly policyOptions?: Record<string, unknown>;
  /** Upstream protocol: `http1` (keep-alive HTTP/1.1 sockets per endpoint) or `h2` (HTTP/2 sessions, gRPC). */
  readonly protocol: 'http1' | 'h2';
  readonly tls?: ClusterTlsConfig;
  /** Connection lifetime limits (see `LifetimePolicy`). */
  readonly lifetime?: {
    readonly maxRequestsPerConnection?: number;
    readonly maxConnectionAgeMs?: number;
    readonly idleTimeoutMs?: number;
  };
  /**
   * Retries on another endpoint: `connectFailures` after a connection could not be made (every
   * protocol: the cluster's retry policy for HTTP/1.1 and h2, the TCP listener's dial loop),
   * `idempotent` for idempotent requests with a replayable body after a transport error or a
   * status in `on` (a kept-alive socket that failed before any answer is retried once anyway);
   * with a single endpoint a status is retried on that endpoint (as Envoy does).
   */
  readonly retries: { readonly connectFailures: number; readonly idempotent: number; readonly on: readonly number[] };
  /**
   * Largest response body withheld while a `retries.on` status is retried, bytes (default
   * 64 KiB); a longer body is passed to the client as it is and not retried; 0 = never withhold.
   * On `h2` clusters also the largest request body kept for a replay (a longer one is not retried).
   */
  readonly retryBufferBytes: number;
  readonly connectTimeoutMs: number;
  /** Time to the upstream's response head, ms; 0 = none. */
  readonly requestTimeoutMs: number;
  /** Upstream idle time between body chunks, ms; 0 = none. */
  readonly bodyTimeoutMs: number;
  /** Host header sent upstream: the client's (`preserve`, default) or this value. */
  readonly hostRewrite?: string;
}

export interface RouteConfig {
  /** Host names this route serves (port ignored); `*` matches any Host header (origin-form only). */
  readonly hosts: readonly string[];
  readonly pathPrefix: string;
  readonly cluster: string;
}

/**
 * The admin listener. `address` serves everything (dashboard, `/config`, `/endpoints`,
 * `/metrics`, probes) and belongs on loopback; `metricsAddress`, when set, is a second
 * listener serving only `/metrics`, `/healthz` and `/readyz`, for a pod IP that Prometheus and
 * the kubelet reach.
 */
export interface AdminConfig {
  readonly address: string;
  readonly metricsAddress?: string;
}

export interface ProxyConfig {
  readonly admin?: AdminConfig;
  readonly accessLog: boolean;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Sliding window for the imbalance gauges, ms. */
  readonly imbalanceWindowMs: number;
  /** How long to wait for in-flight requests at shutdown, ms. */
  readonly drainTimeoutMs: number;
  readonly listeners: readonly ListenerConfig[];
  readonly clusters: readonly ClusterConfig[];
  readonly routes: readonly RouteConfig[];
}

const ADDRESS = '^(\\[[0-9a-fA-F:.]+\\]|[^:\\[\\]]+):[0-9]{1,5}$';
const NAME = '^[a-zA-Z0-9][-a-zA-Z0-9_.]{0,62}$';
const posInt = { type: 'integer', minimum: 1 } as const;
const nonNegInt = { type: 'integer', minimum: 0 } as const;
const nonEmptyString = { type: 'string', minLength: 1 } as const;

/** The JSON schema fragment a spec entry declares for its values (`{}` when only its parser can tell). */
function schemaOf(field: FieldSpec<unknown>): JsonSchema {
  return field.schema ?? {};
}

/**
 * An object schema with exactly `properties` (unknown keys rejected), and `required` ones
 * when given.
 */
function strictObject<const P, const R extends readonly string[] | undefined = undefined>(properties: P, required?: R) {
  return required === undefined
    ? ({ type: 'object', additionalProperties: false, properties } as const)
    : ({ type: 'object', additionalProperties: false, required, properties } as const);
}

/**
 * The fields of a `clusters[]` entry that are the proxy's own (not `Cluster` options). The
 * shared ones come from the cluster spec through `cluster-config-fields.ts`.
 */
export const proxyOnlyClusterProperties = {
  protocol: { enum: ['http1', 'h2'] },
  hostRewrite: nonEmptyString,
  retryBufferBytes: { type: 'integer', minimum: 0, maximum: 16777216 },
} as const;

const sharedCluster = sharedClusterSchema();
/** `recycle`'s limit fields, each with its spec entry's schema. */
const recycleLimitProperties = specSchema(listenerRecycleLimitsSpec).properties as { readonly [k: string]: JsonSchema };

/** The JSON schema every configuration passes before anything starts. */
export const proxyConfigSchema = {
  $id: 'https://evenlb.dev/schemas/proxy-config.json',
  type: 'object',
  additionalProperties: false,
  required: ['listeners', 'clusters'],
  properties: {
    admin: strictObject(
      { address: { type: 'string', pattern: ADDRESS }, metricsAddress: { type: 'string', pattern: ADDRESS } },
      ['address'],
    ),
    accessLog: { type: 'boolean' },
    logLevel: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
    imbalanceWindowMs: posInt,
    drainTimeoutMs: nonNegInt,
    listeners: {
      type: 'array',
      minItems: 1,
      items: strictObject(
        {
          name: { type: 'string', pattern: NAME },
          address: { type: 'string', pattern: ADDRESS },
          protocol: { enum: ['http', 'https', 'tcp'] },
          tls: strictObject(
            {
              cert: nonEmptyString,
              key: nonEmptyString,
              sni: {
                type: 'array',
                items: strictObject(
                  {
                    serverNames: {
                      type: 'array',
                      minItems: 1,
                      items: { type: 'string', pattern: '^(\\*\\.)?[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?$' },
                    },
                    cert: nonEmptyString,
                    key: nonEmptyString,
                  },
                  ['serverNames', 'cert', 'key'],
                ),
              },
              clientCa: nonEmptyString,
            },
            ['cert', 'key'],
          ),
          cluster: { type: 'string', pattern: NAME },
          balance: { enum: ['least-connections', 'maglev'] },
          maxConnectionAgeMs: schemaOf(listenerRecycleLimitsSpec.maxConnectionAgeMs),
          limits: strictObject({
            maxHeaderBytes: { type: 'integer', minimum: 1024, maximum: 1048576 },
            maxHeaderCount: { type: 'integer', minimum: 1, maximum: 10000 },
            firstByteTimeoutMs: posInt,
            tlsHandshakeTimeoutMs: posInt,
            headersTimeoutMs: posInt,
            requestTimeoutMs: nonNegInt,
            bodyReadTimeoutMs: nonNegInt,
            idleTimeoutMs: posInt,
            h2IdleTimeoutMs: posInt,
            h2PingIntervalMs: nonNegInt,
            h2PingTimeoutMs: posInt,
            maxConnections: nonNegInt,
          }),
          recycle: strictObject({
            ...recycleLimitProperties,
            // Its fields are checked by the recycler's own option spec (proxy-config.ts).
            fairShare: { type: 'object' },
          }),
          loadReport: listenerLoadReportSchema,
          trustForwardedHeaders: { type: 'boolean' },
        },
        ['address'],
      ),
    },
    clusters: {
      type: 'array',
      minItems: 1,
      items: {
        ...sharedCluster,
        properties: { ...(sharedCluster.properties as JsonSchema), ...proxyOnlyClusterProperties },
      },
    },
    routes: {
      type: 'array',
      items: strictObject(
        {
          hosts: { type: 'array', minItems: 1, items: nonEmptyString },
          pathPrefix: { type: 'string', pattern: '^/' },
          cluster: { type: 'string', pattern: NAME },
        },
        ['cluster'],
      ),
    },
  },
} as const;
