/**
 * `ProxyServer`: the running proxy built from a validated `ProxyConfig` — clusters (discovery +
 * balancer + upstream transport), the route table, L7 and L4 listeners, the admin listener and
 * the metrics. A reload is a transaction (`#apply`): everything new is started, bound and built
 * before anything running changes, then one synchronous step commits it; a reload that fails
 * at any point (a bind error, an unreadable certificate) leaves every running listener and
 * cluster as it was. Unchanged clusters and listeners are kept as they are; a changed listener
 * on the same address takes over the running socket (`ListenerBinding`: Node 20 has no
 * SO_REUSEPORT, so the socket stays bound and only who serves its connections changes), so not
 * one connection is refused across the reload; replaced listeners drain. What a reload compares
 * against is what runs — each running listener's and cluster's configuration and its socket's
 * health — never the last file read. Requests read the route table once, so each sees either the
 * old or the new one. `/readyz` is ready only while every configured listener is bound and
 * accepting (and discovery has answered).
 *
 * @example
 * const proxy = await ProxyServer.start(configFromFlags({ listen: '127.0.0.1:8080', upstream: 'static:///127.0.0.1:9000' }));
 * // ...
 * await proxy.close();
 */
import { destination, type Logger, pino } from 'pino';
import { type Clock, systemClock, type TimerHandle } from '../core/clock.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { createRandom, type Random } from '../core/random.js';
import { Shutdown } from '../core/shutdown.js';
import { type ClusterView, ProxyMetrics } from '../metrics/proxy-metrics.js';
import type { FairShareStats } from '../server/fair-share/fair-share-shedder.js';
import { AdminServer } from './admin/admin-server.js';
import type { ClusterConfig, ListenerConfig, ProxyConfig } from './config/config-schema.js';
import { parseAddress } from './config/listen-address.js';
import { L7Listener, type L7State } from './listener/l7-listener.js';
import { descriptorProblem, ListenerBinding, listenError } from './listener/listener-binding.js';
import { listenerLoadPort } from './listener/listener-load.js';
import { RouteTable } from './routing/route-table.js';
import { TcpListener } from './tcp/tcp-listener.js';
import { ProxyCluster } from './upstream/proxy-cluster.js';

export interface ProxyOptions {
  readonly logger?: Logger;
  /** Time for every timer and duration of the proxy; default the system clock. */
  readonly clock?: Clock;
  /** Randomness for jitter and picking; default a `createRandom()` seeded once. Seed it in tests. */
  readonly random?: Random;
  /** A further readiness condition for `/readyz` (a sidecar's app check): undefined when ready, else why not. */
  readonly readiness?: { notReady(): string | undefined };
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
  /** The bound socket each listener serves, by listener name (see listener/listener-binding.ts). */
  #bindings = new Map<string, ListenerBinding>();
  #state: L7State;
  #admin: AdminServer | undefined;
  /** The metrics-only admin listener (`admin.metricsAddress`), if any. */
  #metricsAdmin: AdminServer | undefined;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #readiness: ProxyOptions['readiness'];
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
    this.#readiness = options.readiness;
    this.logger = options.logger ?? pino({ level: config.logLevel }, destination(2));
    this.metrics = new ProxyMetrics(() => this.#views(), { windowMs: config.imbalanceWindowMs, clock: this.#clock });
    this.#state = { routes: new RouteTable([], () => undefined as unknown as ProxyCluster), accessLog: false };
  }

  /** Builds and starts a proxy; rejects (with everything stopped) if any part fails to start. */
  static async start(config: ProxyConfig, options: ProxyOptions = {}): Promise<ProxyServer> {
    const proxy = new ProxyServer(config, options);
    try {
      await proxy.#apply(config);
      if (config.admin !== undefined) {
        proxy.#admin = new AdminServer({
          metrics: proxy.metrics,
          config: () => proxy.#config,
          notReady: () => proxy.#notReady(),
        });
        await proxy.#admin.listen(config.admin.address).catch((err: unknown) => {
          throw listenError('admin.address', config.admin?.address ?? '', err);
        });
        if (config.admin.metricsAddress !== undefined) {
          proxy.#metricsAdmin = new AdminServer({
            metrics: proxy.metrics,
            config: () => proxy.#config,
            notReady: () => proxy.#notReady(),
            scope: 'metrics',
          });
          const address = config.admin.metricsAddress;
          await proxy.#metricsAdmin.listen(address).catch((err: unknown) => {
            throw listenError('admin.metricsAddress', address, err);
          });
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

  /**
   * Why the proxy should get no traffic, or undefined: shutting down, out of file descriptors
   * (no listener can accept), a configured listener not bound and served, or a cluster's
   * discovery not answered yet.
   */
  #notReady(): string | undefined {
    if (this.#shutdown.closed) return 'shutting down';
    const descriptors = descriptorProblem();
    if (descriptors !== undefined) return `listeners cannot accept: ${descriptors}`;
    for (const l of this.#config.listeners) {
      const binding = this.#bindings.get(l.name);
      const problem = binding === undefined ? 'not bound' : binding.problem();
      if (problem !== undefined) return `listener ${l.name} (${l.address}): ${problem}`;
    }
    const outside = this.#readiness?.notReady();
    if (outside !== undefined) return outside;
    for (const c of this.#clusters.values()) {
      if (c.source.snapshot().status.state === 'pending') return `cluster ${c.name}: discovery pending`;
    }
    return undefined;
  }

  /**
   * Applies `config` as one transaction. Prepare: start the clusters that changed, bind the
   * addresses no running binding covers, build the listeners that changed — nothing running is
   * touched, and a failure undoes only what was prepared. Commit (one synchronous step): each
   * listener takes its binding (a changed listener on a running address gets that address's
   * socket, so no connection is refused), the route table swaps, and what is no longer used
   * retires (replaced listeners drain, unused addresses stop accepting). What is compared is
   * what runs: each running listener's and cluster's own configuration and binding health.
   */
  async #apply(config: ProxyConfig): Promise<void> {
    const started: ProxyCluster[] = [];
    const built: Listener[] = [];
    const bound: ListenerBinding[] = [];
    try {
      const clusters = new Map<string, ProxyCluster>();
      for (const c of config.clusters) {
        const running = this.#clusters.get(c.name);
        if (running !== undefined && same(running.config, c)) clusters.set(c.name, running);
        else {
          const cluster = this.#newCluster(c);
          started.push(cluster);
          clusters.set(c.name, cluster);
        }
      }
      await this.#discovered(started);
      const state: L7State = {
        routes: new RouteTable(config.routes, (name) => clusters.get(name) as ProxyCluster),
        accessLog: config.accessLog,
      };
      // Addresses: the running binding where there is one (still bound), else a new bind.
      const bindings = new Map<string, ListenerBinding>();
      for (const [i, l] of config.listeners.entries()) {
        const running = this.#bindingFor(l);
        if (running !== undefined) bindings.set(l.name, running);
        else {
          const binding = await ListenerBinding.bind(l.address, this.#clock).catch((err: unknown) => {
            throw listenError(`listeners[${i}].address`, l.address, err);
          });
          bound.push(binding);
          bindings.set(l.name, binding);
        }
      }
      // Listeners: the running one when its configuration and binding are unchanged, else a new one.
      const listeners = new Map<string, Listener>();
      const fresh: ListenerConfig[] = [];
      for (const l of config.listeners) {
        const running = this.#listeners.get(l.name);
        if (running !== undefined && same(running.config, l) && this.#bindings.get(l.name) === bindings.get(l.name)) {
          listeners.set(l.name, running);
          // Same configuration, maybe rotated certificate files: serve the new ones.
          if (running instanceof L7Listener && running.refreshTls())
            this.logger.info({ listener: l.name }, 'listener certificates reloaded');
        } else fresh.push(l);
      }
      // A load port (fair share's, a load report's) binds in the listener's constructor: those are
      // built last, after the running listener on that port stops serving it (the one step a
      // failure after it cannot undo: shedding and probes then wait for the next reload).
      const sheds = (l: ListenerConfig): boolean => listenerLoadPort(l) !== undefined;
      for (const l of [...fresh.filter((x) => !sheds(x)), ...fresh.filter(sheds)]) {
        if (sheds(l)) await this.#freeLoadPort(l, listeners);
        const listener = this.#newListener(l);
        built.push(listener);
        listeners.set(l.name, listener);
      }
      // A close() that began while this was prepared wins: nothing new may start after it.
      if (this.#shutdown.closed) throw new EvenlbError(ErrorCodes.CLOSED, 'proxy: closed during the reload');
      // Commit: nothing below awaits or throws.
      for (const listener of built) {
        listener.listen(bindings.get(listener.config.name) as ListenerBinding);
        this.metrics.initListener(listener.config.name);
      }
      const retiredBindings = [...this.#bindings.values()].filter((b) => ![...bindings.values()].includes(b));
      const retiredListeners = [...this.#listeners.values()].filter((l) => listeners.get(l.config.name) !== l);
      const retiredClusters = [...this.#clusters.values()].filter((c) => clusters.get(c.name) !== c);
      this.#clusters = clusters;
      this.#listeners = listeners;
      this.#bindings = bindings;
      this.#state = state;
      this.#config = config;
      for (const b of retiredBindings) void b.close();
      for (const l of retiredListeners) {
        this.#retiredListeners.add(l);
        void l.close(config.drainTimeoutMs).then(() => this.#retiredListeners.delete(l));
      }
      for (const c of retiredClusters) this.#retireCluster(c, Math.min(config.drainTimeoutMs, 5_000));
    } catch (err) {
      await Promise.all(built.map((l) => l.destroy()));
      await Promise.all(bound.map((b) => b.close()));
      await Promise.all(started.map((c) => c.destroy()));
      throw err;
    }
  }

  /** The running binding `l` takes over: same address (same name too for port 0), still bound. */
  #bindingFor(l: ListenerConfig): ListenerBinding | undefined {
    const ephemeral = parseAddress(l.address).port === 0;
    for (const [name, b] of this.#bindings) {
      if (b.address !== l.address || (ephemeral && name !== l.name)) continue;
      return b.bound ? b : undefined;
    }
    return undefined;
  }

  /** Frees the load port `l` needs from the running listener holding it (unless that one stays, unchanged). */
  async #freeLoadPort(l: ListenerConfig, keeping: ReadonlyMap<string, Listener>): Promise<void> {
    const port = listenerLoadPort(l);
    for (const running of this.#listeners.values()) {
      if (!(running instanceof L7Listener) || keeping.get(running.config.name) === running) continue;
      if (listenerLoadPort(running.config) === port) await running.stopLoadDocument();
    }
  }

  #newCluster(c: ClusterConfig): ProxyCluster {
    return new ProxyCluster(c, {
      clock: this.#clock,
      random: this.#random,
      observer: {
        requestEnded: (cluster, key, _outcome, ms) => this.metrics.observeUpstream(cluster, key, ms),
        ejected: (cluster, key) => this.metrics.ejected(cluster, key),
        retried: (cluster, reason) => this.metrics.retried(cluster, reason),
      },
    });
  }

  #newListener(l: ListenerConfig): Listener {
    const common = { metrics: this.metrics, logger: this.logger, clock: this.#clock, random: this.#random };
    return l.protocol === 'tcp'
      ? new TcpListener(l, { ...common, cluster: () => this.#clusters.get(l.cluster as string) })
      : new L7Listener(l, { ...common, state: () => this.#state });
  }

  /**
   * Waits for new clusters' first discovery answers, but never forever: an unreachable API
   * server must not keep the proxy from starting (requests wait or get 503
   * `discovery-pending`; /readyz says so).
   */
  async #discovered(clusters: readonly ProxyCluster[]): Promise<void> {
    let waitTimer: TimerHandle | undefined;
    await Promise.race([
      Promise.all(clusters.map((c) => c.ready())),
      new Promise<void>((resolve) => {
        waitTimer = this.#clock.setTimeout(resolve, DISCOVERY_WAIT_MS);
      }),
    ]);
    waitTimer?.cancel();
  }

  /**
   * Applies a new configuration. On failure the running configuration stays and the error is
   * rethrown (the caller logs it). Reloads run one at a time.
   */
  reload(config: ProxyConfig): Promise<void> {
    const run = this.#reloading.then(async () => {
      if (this.#shutdown.closed) return;
      try {
        await this.#apply(config);
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
      await Promise.all([...this.#bindings.values()].map((b) => b.close()));
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
      await Promise.all([...this.#bindings.values()].map((b) => b.close()));
      await Promise.all(listeners.map((l) => l.destroy()));
      await Promise.all([...this.#clusters.values(), ...this.#retiredClusters].map((c) => c.destroy(err)));
      await Promise.all([this.#admin?.destroy(), this.#metricsAdmin?.destroy()]);
      this.metrics.close();
    });
  }
}
