/**
 * One configured upstream cluster as the proxy sees it, built on the shared `Cluster`: discovery
 * from the target URI, the `Balancer`, the one outlier detector, the one retry policy, stats.
 * The transports that move the bytes:
 *
 * - `h1` (`Http1Upstream`, HTTP/1.1 upstreams, plain or TLS): the one pool of keep-alive
 *   sockets per endpoint (one `connectionsPerEndpoint` cap), used by the one HTTP/1.1 exchange
 *   (`Http1Exchange`) whatever the client spoke; it picks and retries through the cluster's
 *   attempts (`clusterInternals(cluster).acquire()`). The proxy never calls
 *   `Cluster.dispatch`, so the cluster never makes its own undici pools;
 * - `h2` (`H2SessionPool`, `protocol: h2`, gRPC): sessions per endpoint, a transport only;
 *   each stream takes an attempt of its own, so picking, connect retries, load,
 *   outlier detection and stats are the cluster's, as for `h1`;
 * - `tcp` listeners take one attempt per client connection from `cluster` (`TcpListener`).
 *
 * It also answers "why can nothing be picked" for 503 replies.
 */
import type { Balancer } from '../../balancing/balancer.js';
import { Cluster } from '../../cluster/cluster.js';
import { clusterInternals } from '../../cluster/cluster-internals.js';
import type { ClusterObserver, ClusterOptions } from '../../cluster/cluster-options.js';
import type { ClusterStats } from '../../cluster/cluster-stats.js';
import type { Clock } from '../../core/clock.js';
import { systemClock } from '../../core/clock.js';
import { normalizeHost } from '../../core/host.js';
import { createRandom, type Random } from '../../core/random.js';
import type { EndpointSource } from '../../discovery/endpoint-source.js';
import { LifetimePolicy } from '../../pool/lifetime-policy.js';
import { clusterOptionsOf } from '../config/cluster-config-fields.js';
import type { ClusterConfig } from '../config/config-schema.js';
import { H2SessionPool } from '../h2/h2-session-pool.js';
import { Http1Upstream } from '../http1/upstream-pool.js';

export interface ProxyClusterOptions {
  readonly clock?: Clock;
  readonly random?: Random;
  readonly observer?: ClusterObserver;
  /** An endpoint source to use instead of opening one for `config.target` (tests, embedding). */
  readonly source?: EndpointSource;
}

/** A Host value as a TLS server name: no port, no brackets, lower case. */
function serverName(host: string): string {
  const h = normalizeHost(host);
  return h.charCodeAt(0) === 91 /* [ */ ? h.slice(1, -1) : h;
}

export class ProxyCluster {
  readonly name: string;
  readonly config: ClusterConfig;
  readonly cluster: Cluster;
  readonly h2: H2SessionPool | undefined;
  /** The HTTP/1.1 data path's upstream sockets (plain and TLS upstreams); undefined for `h2` clusters. */
  readonly h1: Http1Upstream | undefined;
  readonly clock: Clock;
  /**
   * Whether the cluster's policy reads load reports (fixed with the policy): the exchanges read
   * a response's `endpoint-load-metrics` only then, without asking the cluster per response.
   */
  readonly readsReports: boolean;
  /** '' (plain HTTP), a configured TLS server name, or undefined: the request's host decides. */
  readonly #fixedServername: string | undefined;
  #closed = false;

  constructor(config: ClusterConfig, options: ProxyClusterOptions = {}) {
    this.name = config.name;
    this.config = config;
    const clock = options.clock ?? systemClock;
    this.clock = clock;
    const random = options.random ?? createRandom();
    // The shared fields, mapped once through the table (a CA file path becomes its PEM here).
    const shared = clusterOptionsOf(config) as Partial<ClusterOptions>;
    // What the transports' own TLS sockets need (the file's tls, defaults filled, CA read).
    const ca = shared.tls?.ca as Buffer | undefined;
    const tls =
      config.tls === undefined
        ? undefined
        : {
            rejectUnauthorized: config.tls.rejectUnauthorized,
            ...(ca === undefined ? {} : { ca }),
            ...(config.tls.servername === undefined ? {} : { servername: config.tls.servername }),
          };
    const h2 = config.protocol === 'h2';
    const lifetime = config.lifetime ?? {};
    this.cluster = new Cluster({
      ...shared,
      name: config.name,
      target: options.source ?? config.target,
      clock,
      random,
      ...(options.observer === undefined ? {} : { observer: options.observer }),
    });
    this.readsReports = clusterInternals(this.cluster).readsReports;
    this.h1 = h2
      ? undefined
      : new Http1Upstream(this.cluster, {
          lifetime: new LifetimePolicy(lifetime, random, `clusters.${config.name}.lifetime`),
          clock,
          connectTimeoutMs: config.connectTimeoutMs,
          maxConnections: config.connectionsPerEndpoint,
          ...(tls === undefined
            ? {}
            : { tls: { rejectUnauthorized: tls.rejectUnauthorized, ...(ca === undefined ? {} : { ca }) } }),
        });
    this.#fixedServername =
      config.tls === undefined
        ? ''
        : (config.tls.servername ?? (config.hostRewrite === undefined ? undefined : serverName(config.hostRewrite)));
    if (h2) {
      this.h2 = new H2SessionPool({
        lifetime: new LifetimePolicy(lifetime, random, `clusters.${config.name}.lifetime`),
        connectTimeoutMs: config.connectTimeoutMs,
        clock,
        ...(tls === undefined ? {} : { tls }),
        // Sessions count as the endpoints' open connections in the cluster's stats.
        onSessionChange: (key, change) => clusterInternals(this.cluster).noteConnection(key, change),
        onEligibleChange: (listener) => clusterInternals(this.cluster).onEligibleChange(listener),
      });
    }
  }

  /**
   * The TLS server name upstream sockets are verified for when a request asked for `host`:
   * `tls.servername`, else the `hostRewrite` host, else the request's host (without its port);
   * '' for plain-HTTP clusters.
   */
  servernameFor(host: string | undefined): string {
    const fixed = this.#fixedServername;
    if (fixed !== undefined) return fixed;
    return host === undefined ? '' : serverName(host);
  }

  get balancer(): Balancer {
    return clusterInternals(this.cluster).balancer;
  }

  get source(): EndpointSource {
    return this.cluster.source;
  }

  /** Resolves when discovery has answered once (or the source closed). */
  ready(): Promise<void> {
    return this.cluster.source.ready();
  }

  /**
   * Why no request can be sent now, or undefined when an endpoint can be picked. Cheap: reads
   * the current picker and discovery status.
   */
  unavailableReason():
    | 'service-not-found'
    | 'discovery-pending'
    | 'no-endpoints'
    | 'none-ready'
    | 'all-ejected'
    | undefined {
    if (this.balancer.picker.endpoints.length > 0) return undefined;
    const status = this.cluster.source.snapshot().status;
    if (status.state === 'not-found') return 'service-not-found';
    if (status.state === 'pending') return 'discovery-pending';
    const set = this.balancer.endpointSet;
    if (set.size === 0) return 'no-endpoints';
    return set.eligible().length === 0 ? 'none-ready' : 'all-ejected';
  }

  /**
   * The cluster's stats (`Cluster.stats()`, which counts every transport's open connections)
   * with what only the transport knows: idle sockets (HTTP/2 sessions without a stream) and
   * requests waiting for a socket, per endpoint.
   */
  stats(): ClusterStats {
    const base = this.cluster.stats();
    const counts = (this.h1 ?? this.h2)?.idleAndQueued();
    if (counts === undefined || counts.size === 0) return base;
    const endpoints = base.endpoints.map((e) => {
      const c = counts.get(e.key);
      return c === undefined ? e : { ...e, idleConnections: e.idleConnections + c.idle, queued: e.queued + c.queued };
    });
    return { ...base, endpoints };
  }

  /** Stops discovery and lets open upstream requests finish. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([this.h2?.close(), this.h1?.close(), this.cluster.close()]);
  }

  async destroy(err?: Error): Promise<void> {
    this.#closed = true;
    await Promise.all([this.h2?.destroy(err), this.h1?.destroy(err), this.cluster.destroy(err)]);
  }
}
