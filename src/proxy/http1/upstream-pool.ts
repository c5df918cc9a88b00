/**
 * Upstream connections for the proxy's HTTP/1.1 data path, one cluster's worth: `Http1Upstream`
 * holds one `Http1EndpointPool` per endpoint (per verified TLS server name) and follows the
 * cluster — a pool whose endpoint leaves the eligible set drains (idle sockets close now, busy
 * ones after their response). Opened and closed sockets are reported to the cluster, which
 * counts them in its stats and metrics. Sockets are `UpstreamConnection`s.
 */
import type { EndpointTransport } from '../../cluster/attempt.js';
import type { Cluster } from '../../cluster/cluster.js';
import { clusterInternals } from '../../cluster/cluster-internals.js';
import type { TimerHandle } from '../../core/clock.js';
import type { Endpoint } from '../../core/endpoint.js';
import { ErrorCodes } from '../../core/errors.js';
import { Shutdown } from '../../core/shutdown.js';
import type { CloseReason } from '../../pool/lifetime-policy.js';
import { Http1EndpointPool, type Http1PoolSettings } from './http1-endpoint-pool.js';

export type { Http1PoolSettings } from './http1-endpoint-pool.js';
export type { ResponseSink, UpstreamConnection } from './upstream-connection.js';

/** How often idle sockets are checked against their limits. */
const SWEEP_MS = 1_000;

/**
 * All HTTP/1.1 upstream sockets of one proxy cluster — its one HTTP/1.1 transport: one
 * `Http1EndpointPool` per endpoint (per verified server name with TLS), one
 * `connectionsPerEndpoint` cap. The cluster picks and accounts (its attempts); this only
 * holds sockets, and drains an endpoint's pools when it leaves the eligible set.
 */
export class Http1Upstream implements EndpointTransport<Http1EndpointPool, [servername?: string]> {
  readonly #cluster: Cluster;
  readonly #settings: Http1PoolSettings;
  /** The pool new requests use, per pool key. */
  readonly #pools = new Map<string, Http1EndpointPool>();
  /** Every pool that still has sockets (draining ones included). */
  readonly #live = new Set<Http1EndpointPool>();
  readonly #unsubscribe: () => void;
  readonly #shutdown = new Shutdown();
  #timer: TimerHandle | undefined;
  #emptied: (() => void) | undefined;

  constructor(cluster: Cluster, settings: Http1PoolSettings) {
    this.#cluster = cluster;
    this.#settings = settings;
    this.#unsubscribe = clusterInternals(cluster).onEligibleChange((eligible) => {
      for (const pool of [...this.#pools.values()]) {
        if (!eligible.has(pool.endpoint.key)) this.drainEndpoint(pool.endpoint.key);
      }
    });
  }

  /**
   * The pool for `endpoint` (created on first use, or when the previous one drains); with TLS,
   * one per server name, since a socket is verified for one name.
   */
  connectionFor(endpoint: Endpoint, servername = ''): Http1EndpointPool {
    const key = servername === '' ? endpoint.key : `${endpoint.key} ${servername}`;
    let pool = this.#pools.get(key);
    if (pool === undefined || pool.draining) {
      pool = new Http1EndpointPool(this, endpoint, this.#settings, servername, key);
      if (this.#shutdown.closed) {
        pool.draining = true; // refuses every request (see Http1EndpointPool.acquire)
        return pool;
      }
      this.#pools.set(key, pool);
      this.#live.add(pool);
      this.#arm();
    }
    return pool;
  }

  /** The endpoint left: its pools take no new request, idle sockets close now, busy ones after their response. */
  drainEndpoint(endpointKey: string): void {
    for (const [key, pool] of [...this.#pools]) {
      if (pool.endpoint.key !== endpointKey) continue;
      this.#pools.delete(key);
      pool.drain('endpoint-removed');
    }
  }

  /** Reports a socket opened or closed to the cluster (stats, metrics). */
  noteConnection(key: string, change: 'opened' | 'closed', reason?: CloseReason): void {
    clusterInternals(this.#cluster).noteConnection(key, change, reason);
  }

  /** Idle sockets and requests waiting for one, per endpoint key (draining pools included), for stats. */
  idleAndQueued(): Map<string, { idle: number; queued: number }> {
    const out = new Map<string, { idle: number; queued: number }>();
    for (const pool of this.#live) {
      const n = out.get(pool.endpoint.key) ?? { idle: 0, queued: 0 };
      n.idle += pool.idleCount;
      n.queued += pool.queued;
      out.set(pool.endpoint.key, n);
    }
    return out;
  }

  /** A pool drained or lost a socket: forget it once it is empty. */
  poolChanged(pool: Http1EndpointPool): void {
    if (!pool.draining || pool.size > 0) return;
    this.#live.delete(pool);
    if (this.#pools.get(pool.key) === pool) this.#pools.delete(pool.key);
    if (this.#live.size === 0) this.#emptied?.();
  }

  #arm(): void {
    if (this.#timer !== undefined || this.#shutdown.closed) return;
    const clock = this.#settings.clock;
    this.#timer = clock.setTimeout(() => {
      this.#timer = undefined;
      const now = clock.now();
      for (const pool of this.#live) pool.sweep(now);
      if (this.#live.size > 0) this.#arm();
    }, SWEEP_MS);
  }

  /** Graceful: idle sockets close now, busy ones after their response; settles once all are closed. Idempotent. */
  close(): Promise<void> {
    return this.#shutdown.close(() => {
      this.#stop();
      const emptied = new Promise<void>((resolve) => {
        this.#emptied = resolve;
      });
      for (const p of [...this.#live]) p.drain('shutdown');
      if (this.#live.size === 0) this.#emptied?.();
      return emptied;
    });
  }

  /** Abrupt: every socket is destroyed (their exchanges fail); also settles a pending `close()`. Idempotent. */
  destroy(err?: Error): Promise<void> {
    return this.#shutdown.destroy(async () => {
      this.#stop();
      const error = err ?? Object.assign(new Error('upstream connections destroyed'), { code: ErrorCodes.CLOSED });
      for (const p of [...this.#live]) p.destroy(error);
    });
  }

  #stop(): void {
    this.#unsubscribe();
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#pools.clear();
  }
}
