/**
 * `ProxyServer`: the running proxy built from a validated `ProxyConfig` — clusters (discovery +
 * balancer + upstream transport), the route table, L7 and L4 listeners, the admin listener and
 * the metrics. `reload(config)` swaps in a new configuration without dropping connections:
 * unchanged clusters and listeners are kept as they are, new ones start, removed ones drain;
 * requests read the route table once, so each sees either the old or the new one. A reload
 * that fails (a listener cannot bind, a source cannot open) keeps the running configuration.
 *
 * @example
 * const proxy = await ProxyServer.start(configFromFlags({ listen: '127.0.0.1:8080', upstream: 'static:///127.0.0.1:9000' }));
 * // ...
 * await proxy.close();
 */
import { destination, type Logger, pino } from 'pino';
import { type Clock, systemClock, type TimerHandle } from '../core/clock.js';
import { createRandom, type Random } from '../core/random.js';
import { Shutdown } from '../core/shutdown.js';
import { type ClusterView, ProxyMetrics } from '../metrics/proxy-metrics.js';
import type { FairShareStats } from '../server/fair-share/fair-share-shedder.js';
import { AdminServer } from './admin-server.js';
import type { ClusterConfig, ListenerConfig, ProxyConfig } from './config-schema.js';
import { L7Listener, type L7State } from './listener/l7-listener.js';
import { RouteTable } from './routing/route-table.js';
import { TcpListener } from './tcp/tcp-listener.js';
import { ProxyCluster } from './upstream/proxy-cluster.js';

export interface ProxyOptions {
  readonly logger?: Logger;
  /** Time for every timer and duration of the proxy; default the system clock. */
  readonly clock?: Clock;
  /** Randomness for jitter and picking; default a `createRandom()` seeded once. Seed it in tests. */
  readonly random?: Random;
}

type Listener = L7Listener | TcpListener;

/** How long start and reload wait for new clusters' first discovery answer. */
const DISCOVERY_WAIT_MS = 5_000;

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export class ProxyServer {
  readonly logger: Logger;
  readonly metrics: ProxyMetrics;
  #config: ProxyConfig;
  #clusters = new Map<string, ProxyCluster>();
  #listeners = new Map<string, Listener>();
  #state: L7State;
  #admin: AdminServer | undefined;
  /** The metrics-only admin listener (`admin.metricsAddress`), if any. */
  #metricsAdmin: AdminServer | undefined;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #shutdown = new Shutdown();
  /** Clusters and listeners a reload replaced, still finishing their in-flight work. */
  readonly #retiredClusters = new Set<ProxyCluster>();
  readonly #retiredListeners = new Set<Listener>();
  /** Timers closing replaced clusters after the drain delay (cancelled by close/destroy). */
  readonly #retireTimers = new Set<TimerHandle>();
  #reloading: Promise<void> = Promise.resolve();

  private constructor(config: ProxyConfig, options: ProxyOptions) {
    this.#config = config;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? createRandom();
    this.logger = options.logger ?? pino({ level: config.logLevel }, destination(2));
    this.metrics = new ProxyMetrics(() => this.#views(), { windowMs: config.imbalanceWindowMs, clock: this.#clock });
    this.#state = { routes: new RouteTable([], () => undefined as unknown as ProxyCluster), accessLog: false };
  }

  /** Builds and starts a proxy; rejects (with everything stopped) if any part fails to start. */
  static async start(config: ProxyConfig, options: ProxyOptions = {}): Promise<ProxyServer> {
    const proxy = new ProxyServer(config, options);
    try {
      await proxy.#apply(config, true);
      if (config.admin !== undefined) {
        proxy.#admin = new AdminServer({
          metrics: proxy.metrics,
          config: () => proxy.#config,
          notReady: () => proxy.#notReady(),
        });
        await proxy.#admin.listen(config.admin.address);
        if (config.admin.metricsAddress !== undefined) {
          proxy.#metricsAdmin = new AdminServer({
            metrics: proxy.metrics,
            config: () => proxy.#config,
            notReady: () => proxy.#notReady(),
            scope: 'metrics',
          });
          await proxy.#metricsAdmin.listen(config.admin.metricsAddress);
        }
      }
    } catch (err) {
      await proxy.destroy();
      throw err;
    }
    proxy.logger.info(
      {
        listeners: [...proxy.#listeners.values()].map((l) => ({ name: l.config.name, port: l.port })),
        admin: proxy.#admin?.port,
        metrics: proxy.#metricsAdmin?.port,
      },
      'proxy started',
    );
    return proxy;
  }

  get config(): ProxyConfig {
    return this.#config;
  }

  /** Bound port of a listener by name (useful with port 0). */
  listenerPort(name: string): number | undefined {
    return this.#listeners.get(name)?.port;
  }

  /** What a listener's fair-share shedding (`recycle.fairShare`) has seen and done; undefined when off. */
  listenerFairShare(name: string): FairShareStats | undefined {
    const l = this.#listeners.get(name);
    return l instanceof L7Listener ? l.recycling.fairShare() : undefined;
  }

  get adminPort(): number | undefined {
    return this.#admin?.port;
  }

  /** Bound port of the metrics-only admin listener, when configured. */
  get metricsPort(): number | undefined {
    return this.#metricsAdmin?.port;
  }

  /** Current clusters by name. */
  get clusters(): ReadonlyMap<string, ProxyCluster> {
    return this.#clusters;
  }

  #views(): ClusterView[] {
    return [...this.#clusters.values()].map((c) => ({ name: c.name, stats: () => c.stats() }));
  }

  #notReady(): string | undefined {
    if (this.#shutdown.closed) return 'shutting down';
    for (const c of this.#clusters.values()) {
      if (c.source.snapshot().status.state === 'pending') return `cluster ${c.name}: discovery pending`;
    }
    return undefined;
  }

  /**
   * Applies `config`: starts new clusters and listeners first (so a failure leaves the old
   * configuration running), then swaps the route table, then drains what is no longer used.
   */
  async #apply(config: ProxyConfig, initial: boolean): Promise<void> {
    const old = this.#config;
    const keepCluster = (c: ClusterConfig): boolean => {
      const prev = old.clusters.find((o) => o.name === c.name);
      return !initial && prev !== undefined && same(prev, c) && this.#clusters.has(c.name);
    };
    const newClusters = new Map<string, ProxyCluster>();
    const started: ProxyCluster[] = [];
    const startedListeners: Listener[] = [];
    try {
      for (const c of config.clusters) {
        if (keepCluster(c)) newClusters.set(c.name, this.#clusters.get(c.name) as ProxyCluster);
        else {
          const cluster = new ProxyCluster(c, {
            clock: this.#clock,
            random: this.#random,
            observer: {
              requestEnded: (cluster, key, _outcome, ms) => this.metrics.observeUpstream(cluster, key, ms),
              ejected: (cluster, key) => this.metrics.ejected(cluster, key),
              retried: (cluster, reason) => this.metrics.retried(cluster, reason),
            },
          });
          started.push(cluster);
          newClusters.set(c.name, cluster);
        }
      }
      // Wait for first discovery answers, but never forever: an unreachable API server must not
      // keep the proxy from starting (requests wait or get 503 `discovery-pending`; /readyz says so).
      let waitTimer: TimerHandle | undefined;
      await Promise.race([
        Promise.all(started.map((c) => c.ready())),
        new Promise<void>((resolve) => {
          waitTimer = this.#clock.setTimeout(resolve, DISCOVERY_WAIT_MS);
        }),
      ]);
      waitTimer?.cancel();
      const routes = new RouteTable(config.routes, (name) => newClusters.get(name) as ProxyCluster);
      const state: L7State = { routes, accessLog: config.accessLog };
      // Listeners: keep identical ones, restart changed ones, start new ones.
      const keepListener = (l: ListenerConfig): boolean => {
        const prev = old.listeners.find((o) => o.name === l.name);
        return !initial && prev !== undefined && same(prev, l) && this.#listeners.has(l.name);
      };
      const toStop: Listener[] = [];
      for (const [name, l] of this.#listeners) {
        const next = config.listeners.find((x) => x.name === name);
        if (initial || next === undefined || !keepListener(next)) toStop.push(l);
      }
      // Free the addresses of listeners being replaced before binding new ones.
      const freeing = toStop.filter((l) => config.listeners.some((n) => n.address === l.config.address));
      const draining = freeing.map((l) => l.close(config.drainTimeoutMs));
      // Fair-share shedding moves with its load-exchange port: a replaced listener gives it up first.
      const loadPorts = new Set(config.listeners.map((l) => l.recycle?.fairShare?.loadPort));
      for (const l of toStop) {
        const port = l.config.recycle?.fairShare?.loadPort;
        if (l instanceof L7Listener && port !== undefined && loadPorts.has(port)) await l.recycling.stopShedding();
      }
      const newListeners = new Map<string, Listener>();
      for (const l of config.listeners) {
        if (keepListener(l)) {
          const kept = this.#listeners.get(l.name) as Listener;
          // Same configuration, maybe rotated certificate files: serve the new ones.
          if (kept instanceof L7Listener && kept.refreshTls()) {
            this.logger.info({ listener: l.name }, 'listener certificates reloaded');
          }
          newListeners.set(l.name, kept);
          continue;
        }
        const listener: Listener =
          l.protocol === 'tcp'
            ? new TcpListener(l, {
                cluster: () => this.#clusters.get(l.cluster as string),
                metrics: this.metrics,
                logger: this.logger,
                clock: this.#clock,
                random: this.#random,
              })
            : new L7Listener(l, {
                state: () => this.#state,
                metrics: this.metrics,
                logger: this.logger,
                clock: this.#clock,
                random: this.#random,
              });
        await listener.listen();
        this.metrics.initListener(l.name);
        startedListeners.push(listener);
        newListeners.set(l.name, listener);
      }
      // Commit.
      const oldClusters = this.#clusters;
      this.#clusters = newClusters;
      this.#listeners = newListeners;
      this.#state = state;
      this.#config = config;
      for (const l of toStop) {
        this.#retiredListeners.add(l);
        const closing = freeing.includes(l)
          ? (draining[freeing.indexOf(l)] as Promise<void>)
          : l.close(config.drainTimeoutMs);
        void closing.then(() => this.#retiredListeners.delete(l));
      }
      for (const [name, c] of oldClusters) {
        if (newClusters.get(name) !== c) this.#retireCluster(c, Math.min(config.drainTimeoutMs, 5_000));
      }
    } catch (err) {
      for (const l of startedListeners) await l.destroy();
      for (const c of started) await c.destroy();
      throw err;
    }
  }

  /**
   * Applies a new configuration. On failure the running configuration stays and the error is
   * rethrown (the caller logs it). Reloads run one at a time.
   */
  reload(config: ProxyConfig): Promise<void> {
    const run = this.#reloading.then(async () => {
      if (this.#shutdown.closed) return;
      try {
        await this.#apply(config, false);
        this.metrics.reloads.inc({ result: 'ok' });
        this.logger.info('configuration reloaded');
      } catch (err) {
        this.metrics.reloads.inc({ result: 'error' });
        throw err;
      }
    });
    this.#reloading = run.catch(() => {});
    return run;
  }

  /** Lets in-flight requests finish on a replaced cluster for `delayMs`, then closes its pools. */
  #retireCluster(cluster: ProxyCluster, delayMs: number): void {
    this.#retiredClusters.add(cluster);
    const timer = this.#clock.setTimeout(() => {
      this.#retireTimers.delete(timer);
      void cluster.close().then(() => this.#retiredClusters.delete(cluster));
    }, delayMs);
    this.#retireTimers.add(timer);
  }

  /**
   * Graceful stop: listeners stop accepting and drain (in-flight requests finish; after
   * `drainTimeoutMs` the rest are cut), then clusters close and the admin servers stop.
   * Always settles; idempotent; a `destroy()` meanwhile settles it too.
   */
  close(): Promise<void> {
    return this.#shutdown.close(async () => {
      for (const t of this.#retireTimers) t.cancel();
      this.#retireTimers.clear();
      const timeout = this.#config.drainTimeoutMs;
      const listeners = [...this.#listeners.values(), ...this.#retiredListeners];
      await Promise.all(listeners.map((l) => l.close(timeout)));
      await Promise.all([...this.#clusters.values(), ...this.#retiredClusters].map((c) => c.close()));
      await Promise.all([this.#admin?.close(), this.#metricsAdmin?.close()]);
      this.metrics.close();
    });
  }

  /**
   * Abrupt stop: every client connection and upstream request is cut, discovery and admin
   * servers stop. Settles within a second, also settling a pending `close()`. Idempotent.
   */
  destroy(err?: Error): Promise<void> {
    return this.#shutdown.destroy(async () => {
      for (const t of this.#retireTimers) t.cancel();
      this.#retireTimers.clear();
      const listeners = [...this.#listeners.values(), ...this.#retiredListeners];
      await Promise.all(listeners.map((l) => l.destroy()));
      await Promise.all([...this.#clusters.values(), ...this.#retiredClusters].map((c) => c.destroy(err)));
      await Promise.all([this.#admin?.destroy(), this.#metricsAdmin?.destroy()]);
      this.metrics.close();
    });
  }
}
