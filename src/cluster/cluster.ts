/**
 * A `Cluster` owns the request lifecycle for one Service: endpoint source → `Balancer` (one
 * pick per request) → load accounting (`ClusterLedger`) → passive outlier detection, one
 * `RetryPolicy`, stats, and endpoint-eligibility events. Transports only move bytes: its own
 * undici pools (`ClusterTransport`) through `dispatch()`; the node:http agent, the proxy and
 * the gRPC policy through the hooks `clusterInternals(cluster)` hands out (not its public
 * surface). The `BalancedAgent` holds one cluster per route, the proxy one per upstream, the
 * gRPC policy one per channel.
 *
 * In round-trip mode (the `RoundTripLoadBalancing` gate, on by default) a request picks an
 * endpoint, goes to `scheme://ip:port` with `Host` (and so TLS SNI and certificate checks)
 * kept as the Service's authority, counts as the endpoint's load from pick to end, and is
 * retried as the retry policy says. An endpoint that leaves the eligible set is drained: no
 * new requests, idle sockets close at once, in-flight ones finish. With the gate off (legacy
 * mode) it reproduces kube-apiserver's old behaviour: ONE pool keyed by the Service origin, the
 * endpoint picked only when a connection is dialled, idle connections reused whatever
 * discovery says.
 *
 * No eligible endpoint fails a request at once (`EVENLB_NO_ENDPOINTS`, `EVENLB_SERVICE_NOT_FOUND`);
 * before discovery's first answer a request waits up to `discoveryTimeoutMs`
 * (`EVENLB_DISCOVERY_PENDING`).
 *
 * @example
 * const cluster = new Cluster({ name: 'webhook', target: 'static:///10.0.0.1:8443,10.0.0.2:8443', tls: { ca } });
 * const res = await request('https://webhook.policy.svc:8443/validate', { dispatcher: cluster.dispatcher });
 * await cluster.close();
 */
import type { Dispatcher } from 'undici';
import { Balancer } from '../balancing/balancer.js';
import { OutlierDetector } from '../balancing/outlier-detector.js';
import type { PickContext } from '../balancing/picker.js';
import { type Clock, systemClock } from '../core/clock.js';
import type { Endpoint } from '../core/endpoint.js';
import type { EvenlbError } from '../core/errors.js';
import { FeatureGates } from '../core/feature-gates.js';
import { createRandom, type Random } from '../core/random.js';
import { Shutdown } from '../core/shutdown.js';
import { createEndpointSource } from '../discovery/create-endpoint-source.js';
import type { DiscoverySnapshot, EndpointSource } from '../discovery/endpoint-source.js';
import { departedEndpoints, eligibleKeys } from '../pool/departed-endpoints.js';
import type { AttemptHost } from './attempt-chain.js';
import { ClusterDispatcher } from './cluster-dispatcher.js';
import { closedError, noEndpointError, pendingError } from './cluster-errors.js';
import { clusterHooks } from './cluster-hooks.js';
import { type ClusterInternals, exposeClusterInternals } from './cluster-internals.js';
import { ClusterLedger } from './cluster-ledger.js';
import {
  balancerOptions,
  type ClusterOptions,
  type ParsedClusterOptions,
  parseClusterOptions,
} from './cluster-options.js';
import { clusterProber } from './cluster-prober.js';
import { type ClusterStats, collectClusterStats } from './cluster-stats.js';
import { ClusterTransport } from './cluster-transport.js';
import { controllerHandler } from './controller-handler.js';
import { DiscoveryWait } from './discovery-wait.js';
import type { HttpLoadProber } from './http-load-prober.js';
import { forEndpoint, isHttpsOrigin, ServiceAuthority } from './request-headers.js';
import { RetryPolicy, type RetryReason } from './retry-policy.js';
import { RoutedRequest, type RoutedRequestHost } from './routed-request.js';

export class Cluster {
  readonly name: string;
  /** The options as parsed (frozen, defaults filled in). */
  readonly options: ParsedClusterOptions;
  /** Where the endpoints come from. */
  readonly source: EndpointSource;
  /** `round-trip` (pick per request) or `legacy` (pick per dialled connection). */
  readonly mode: 'round-trip' | 'legacy';
  readonly #balancer: Balancer;
  /** What is retried, where and how often — for every transport of this cluster. */
  readonly #retryPolicy: RetryPolicy;
  /** The hooks evenlb's own transports reach through `clusterInternals(cluster)`. */
  readonly #internals: ClusterInternals;
  readonly #clock: Clock;
  readonly #ownsSource: boolean;
  readonly #outlier: OutlierDetector | undefined;
  /** Its undici pools: made on the first `dispatch` (transports that only `acquire`, like the proxy's, never need them). */
  #undici: ClusterTransport | undefined;
  readonly #makeTransport: () => ClusterTransport;
  /** Requests, retries and what is counted per endpoint beside the load records. */
  readonly #ledger: ClusterLedger;
  /** Requests sent before discovery's first answer. */
  readonly #discovery: DiscoveryWait<RoutedRequest>;
  readonly #eligibleListeners = new Set<(eligible: ReadonlySet<string>) => void>();
  readonly #pick: PickContext = {};
  /** What routed requests call back into (kept off the public surface). */
  readonly #routed: RoutedRequestHost;
  /** What attempt chains (`acquire`, `track`) call back into. */
  readonly #attempts: AttemptHost;
  readonly #unsubscribe: () => void;
  #legacyExclude: string | undefined;
  readonly #authority: ServiceAuthority;
  /** Load probes (when the policy reads them), and the endpoint keys they may ask (eligible now). */
  readonly #prober: HttpLoadProber | undefined;
  #eligible: ReadonlySet<string> = new Set();
  /** Where the next search for a usable endpoint starts in the picker's list (`acquireUsable`). */
  readonly #usableFrom = { next: 0 };
  #closed = false;
  readonly #shutdown = new Shutdown();

  static {
    exposeClusterInternals((cluster) => (#internals in cluster ? cluster.#internals : undefined));
  }

  constructor(input: ClusterOptions) {
    const o = parseClusterOptions(input);
    this.options = o;
    this.name = o.name;
    this.#authority = new ServiceAuthority(o.authority, o.name);
    const { retryConnectFailures: connectRetries, retryIdempotent, retryOn } = o;
    this.#retryPolicy = new RetryPolicy({ connectRetries, retryIdempotent, retryOn });
    this.#attempts = {
      retryPolicy: this.#retryPolicy,
      closed: () => this.#closed,
      pick: (exclude, hash) => this.#pickForConnection(exclude, hash),
      open: (endpoint) => this.#ledger.open(endpoint),
      settle: (key, startMs, outcome, response) => this.#ledger.settle(key, startMs, outcome, response),
      withdraw: (key, startMs, request) => this.#ledger.withdraw(key, startMs, request),
      retried: (reason) => this.#ledger.retried(reason),
      elsewhere: (key) => this.#elsewhere(key),
    };
    this.#clock = o.clock ?? systemClock;
    this.#discovery = new DiscoveryWait(this.#clock, o.discoveryTimeoutMs, () => this.#pendingError());
    const random: Random = o.random ?? createRandom();
    const gates = FeatureGates.parse(o.featureGates);
    this.mode = gates.enabled('RoundTripLoadBalancing') ? 'round-trip' : 'legacy';
    this.#prober = clusterProber(o, this.#clock, (key) => this.#eligible.has(key) && !this.#closed);
    this.#balancer = new Balancer({ ...balancerOptions(o, this.#clock, random), prober: this.#prober });
    if (o.outlierDetection !== false) {
      const balancer = this.#balancer;
      this.#outlier = new OutlierDetector(o.outlierDetection, {
        clock: this.#clock,
        onChange: (ejected) => balancer.setEjected(ejected),
        onEject: (key, ms) => o.observer?.ejected?.(this.name, key, ms),
      });
    }
    const ledger = new ClusterLedger({
      name: this.name,
      balancer: this.#balancer,
      outlier: this.#outlier,
      observer: o.observer,
      clock: this.#clock,
      statsWindowMs: o.statsWindowMs,
      poolsBusy: (key) => this.#undici?.busy(key) === true,
      forgetPools: (key) => this.#undici?.forget(key),
    });
    this.#ledger = ledger;
    this.#routed = {
      retryPolicy: this.#retryPolicy,
      readsReports: ledger.readsReports,
      route: (r) => this.#route(r),
      bind: (r) => this.#bind(r),
      unbind: (r) => r.endpoint !== undefined && ledger.withdraw(r.endpoint.key, r.startMs, false),
      settle: (r, outcome) => r.endpoint !== undefined && ledger.settle(r.endpoint.key, r.startMs, outcome, r),
      retry: (r, reason) => this.#retry(r, reason),
    };
    this.#makeTransport = () =>
      new ClusterTransport(o, random, this.#clock, {
        opened: (key, known) => ledger.poolConnectionOpened(key, known),
        closed: (key, known, reason) => ledger.poolConnectionClosed(key, known, reason),
      });
    if (typeof o.target === 'string') {
      this.source = createEndpointSource(o.target, { clock: this.#clock, ...(o.sourceOptions ?? {}) });
      this.#ownsSource = true;
    } else {
      this.source = o.target;
      this.#ownsSource = false;
    }
    this.#internals = clusterHooks({
      name: this.name,
      source: this.source,
      balancer: this.#balancer,
      ledger,
      attempts: this.#attempts,
      pick: this.#pick,
      usableFrom: this.#usableFrom,
      eligibleListeners: this.#eligibleListeners,
      closed: () => this.#closed,
      pending: () => (this.#discovery.pending ? this.#pendingError() : undefined),
      pickForConnection: (exclude, hash) => this.#pickForConnection(exclude, hash),
    });
    this.#unsubscribe = this.source.subscribe((s) => this.#onSnapshot(s));
    this.#onSnapshot(this.source.snapshot());
  }

  /**
   * Sends one request. `opts` are undici dispatch options (`origin` names the Service as the
   * caller addressed it); `handler` may use either undici handler style (the cluster runs the
   * controller style; a callback-style handler is adapted, see `controller-handler.ts`). Always
   * returns true: the cluster queues rather than pushing back.
   *
   * @example
   * cluster.dispatch({ origin: 'http://web.prod.svc', path: '/', method: 'GET' }, handler);
   */
  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const caller = controllerHandler(handler);
    const https = isHttpsOrigin(opts.origin);
    const sent =
      this.mode === 'legacy'
        ? opts
        : forEndpoint(opts, this.#authority.of(opts.origin), https ? this.options.tls?.servername : undefined);
    const request = new RoutedRequest(this.#routed, sent, caller, https);
    if (this.#closed) {
      request.fail(closedError(this.name));
      return true;
    }
    this.#ledger.requests++;
    this.#route(request);
    return true;
  }

  /** An undici `Dispatcher` view of this cluster (for `undici.request(url, { dispatcher })`). */
  get dispatcher(): Dispatcher {
    this.#dispatcher ??= new ClusterDispatcher(this);
    return this.#dispatcher;
  }
  #dispatcher: Dispatcher | undefined;

  // ---- For evenlb's transports that manage their own connections (the hooks: `cluster-hooks.ts`) ----

  #elsewhere(key: string | undefined): boolean {
    return this.#balancer.picker.endpoints.some((t) => t.endpoint.key !== key);
  }

  /** Picks an endpoint without accounting a request (also the legacy, dial-time decision). */
  #pickForConnection(exclude?: string, hash?: number): Endpoint | EvenlbError {
    if (this.#closed) return closedError(this.name);
    return this.#discovery.pending ? this.#pendingError() : this.#pickEndpoint(exclude, hash);
  }

  #pickEndpoint(exclude: string | undefined, hash: number | undefined): Endpoint | EvenlbError {
    // A hashed pick gets its own context: the shared one never carries a hash.
    const ctx: PickContext = hash === undefined ? this.#pick : { hash };
    ctx.exclude = exclude;
    const picked = this.#balancer.picker.pick(ctx);
    return picked.type === 'none' ? noEndpointError(this.name, this.source, picked.reason) : picked.endpoint;
  }

  /**
   * Resolves once discovery has answered (at once if it has); rejects after `discoveryTimeoutMs`.
   *
   * @example
   * await cluster.whenDiscovered(); // then cluster.stats().endpoints lists what discovery found
   */
  whenDiscovered(): Promise<void> {
    return this.#discovery.whenAnswered();
  }

  /**
   * Stats per endpoint and for the whole cluster.
   *
   * @example
   * const { endpoints, window } = cluster.stats(); // window.imbalance.maxOverMean: 1 is perfectly even
   */
  stats(): ClusterStats {
    return collectClusterStats({
      ...this.#ledger.statsParts(),
      target: this.source.target,
      mode: this.mode,
      discovery: this.source.snapshot().status.state,
      poolsOf: (key) => this.#undici?.poolsOf(key) ?? [],
      pools: this.#undici?.legacyPools() ?? [].values(),
      loadProbes: this.#prober?.stats(),
    });
  }

  /**
   * Graceful: new requests fail with `EVENLB_CLOSED`, requests waiting for discovery fail, the
   * ones in flight finish, then sockets close and the source stops. Always settles; idempotent;
   * a `destroy()` while it waits settles it.
   */
  close(): Promise<void> {
    return this.#shutdown.close(async () => {
      this.#stop(undefined);
      await Promise.all([this.#undici?.close(), this.#prober?.close()]);
      if (this.#ownsSource) await this.source.close();
    });
  }

  /**
   * Abrupt: queued and in-flight requests fail with `err` (default `EVENLB_CLOSED`), sockets are
   * destroyed. Settles a pending `close()` too. Idempotent.
   */
  destroy(err?: Error): Promise<void> {
    return this.#shutdown.destroy(async () => {
      const error = err ?? closedError(this.name);
      this.#stop(error);
      await Promise.all([this.#undici?.destroy(error), this.#prober?.destroy()]);
      if (this.#ownsSource) await this.source.close();
    });
  }

  #route(request: RoutedRequest): void {
    if (this.#closed) {
      request.fail(closedError(this.name));
      return;
    }
    if (this.#discovery.pending) {
      this.#discovery.hold(request);
      return;
    }
    if (this.mode === 'legacy') {
      this.#legacyPool(request).dispatch(request);
      return;
    }
    // The hot path: the picker's own load record, no lookups beyond the entry.
    const ctx = this.#pick;
    ctx.exclude = request.exclude;
    const picked = this.#balancer.picker.pick(ctx);
    if (picked.type === 'none') {
      request.fail(noEndpointError(this.name, this.source, picked.reason));
      return;
    }
    const endpoint = picked.endpoint;
    const startMs = picked.load.start();
    this.#ledger.counted(endpoint, startMs);
    request.open(endpoint, startMs);
    this.#transport.connectionFor(endpoint, request.https).dispatch(request);
  }

  get #transport(): ClusterTransport {
    this.#undici ??= this.#makeTransport();
    return this.#undici;
  }

  #bind(request: RoutedRequest): void {
    const endpoint = request.connection?.endpoint;
    if (endpoint !== undefined) request.open(endpoint, this.#ledger.open(endpoint));
  }

  /**
   * Sends `request` again, counted once (`retries`, observer `retried`). It goes to another
   * endpoint; a stale kept-alive connection may be retried on the same endpoint when it is
   * the only one (a new connection will be dialled).
   */
  #retry(request: RoutedRequest, reason: RetryReason): boolean {
    if (this.#closed) return false;
    const elsewhere = this.#elsewhere(request.endpoint?.key);
    if (!elsewhere && reason !== 'reused-connection') return false;
    request.prepareRetry();
    if (!elsewhere) request.exclude = undefined;
    this.#ledger.retried(reason);
    if (this.mode === 'legacy') this.#legacyExclude = request.exclude;
    this.#route(request);
    return true;
  }

  #pendingError(): EvenlbError {
    return pendingError(this.name, this.source, this.options.discoveryTimeoutMs);
  }

  #onSnapshot(snapshot: DiscoverySnapshot): void {
    if (this.#closed) return;
    this.#balancer.update(snapshot.endpoints);
    this.#outlier?.setEndpoints(snapshot.endpoints);
    const eligible = eligibleKeys(snapshot.endpoints);
    this.#eligible = eligible;
    for (const key of departedEndpoints(this.#ledger.entries.keys(), eligible)) this.#undici?.drainEndpoint(key);
    this.#ledger.follow(snapshot.endpoints);
    const held = snapshot.status.state === 'pending' ? [] : this.#discovery.answered();
    for (const listener of [...this.#eligibleListeners]) listener(eligible);
    for (const r of held) this.#route(r);
  }

  #legacyPool(request: RoutedRequest) {
    const origin = request.opts.origin;
    return this.#transport.legacyPool(typeof origin === 'string' ? origin : String(origin), request.https, () => {
      // Queued requests still dial while the cluster closes: no closed check here.
      const exclude = this.#legacyExclude;
      this.#legacyExclude = undefined;
      return this.#pickEndpoint(exclude, undefined);
    });
  }

  /** Refuses new work and fails requests still waiting for discovery (shared by close and destroy). */
  #stop(err: Error | undefined): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#discovery.failAll(err ?? closedError(this.name));
    this.#unsubscribe();
    this.#eligibleListeners.clear();
    this.#outlier?.close();
    this.#balancer.close();
  }
}
