/**
 * A `Cluster` owns the request lifecycle for one Service: endpoint source → `Balancer` (one
 * pick per request) → load accounting → passive outlier detection, one `RetryPolicy`, stats,
 * and endpoint-eligibility events. Transports only move bytes: its own undici pools
 * (`ClusterTransport`, one pool per endpoint and scheme under the `LifetimePolicy`) through
 * `dispatch()`, and evenlb's other transports (the node:http agent, the proxy, the gRPC policy)
 * through the hooks `clusterInternals(cluster)` hands out (`acquire()` gives an `Attempt`),
 * which are not part of its public surface. The `BalancedAgent` holds one cluster per route;
 * the proxy one per upstream; the gRPC policy one per channel.
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
import type { CloseReason } from '../pool/lifetime-policy.js';
import { type AttemptHost, attemptOn, firstAttempt } from './attempt-chain.js';
import { ClusterDispatcher } from './cluster-dispatcher.js';
import { closedError, noEndpointError, pendingError } from './cluster-errors.js';
import { type ClusterInternals, exposeClusterInternals } from './cluster-internals.js';
import {
  balancerOptions,
  type ClusterObserver,
  type ClusterOptions,
  type ParsedClusterOptions,
  parseClusterOptions,
  type RequestOutcome,
} from './cluster-options.js';
import { type ClusterStats, collectClusterStats } from './cluster-stats.js';
import { ClusterTransport } from './cluster-transport.js';
import { controllerHandler } from './controller-handler.js';
import { EndpointEntry, WINDOW_BUCKETS } from './endpoint-entry.js';
import { forEndpoint } from './request-headers.js';
import { RetryPolicy, type RetryReason } from './retry-policy.js';
import { RoutedRequest, type RoutedRequestHost } from './routed-request.js';
import { pickUsable } from './usable-pick.js';

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
  readonly #observer: ClusterObserver | undefined;
  readonly #entries = new Map<string, EndpointEntry>();
  readonly #waiting = new Set<RoutedRequest>();
  readonly #eligibleListeners = new Set<(eligible: ReadonlySet<string>) => void>();
  readonly #externalConnections = new Map<string, number>();
  readonly #pick: PickContext = {};
  /** What routed requests call back into (kept off the public surface). */
  readonly #routed: RoutedRequestHost;
  /** What attempt chains (`acquire`, `track`) call back into. */
  readonly #attempts: AttemptHost;
  readonly #bucketMs: number;
  readonly #unsubscribe: () => void;
  #pending = true;
  #legacyExclude: string | undefined;
  #lastOrigin: unknown;
  #lastAuthority = '';
  /** Where the next search for a usable endpoint starts in the picker's list (`acquireUsable`). */
  readonly #usableFrom = { next: 0 };
  #requests = 0;
  #retries = 0;
  #closed = false;
  readonly #shutdown = new Shutdown();

  static {
    exposeClusterInternals((cluster) => (#internals in cluster ? cluster.#internals : undefined));
  }

  constructor(input: ClusterOptions) {
    const o = parseClusterOptions(input);
    this.options = o;
    this.name = o.name;
    const { retryConnectFailures: connectRetries, retryIdempotent, retryOn } = o;
    this.#retryPolicy = new RetryPolicy({ connectRetries, retryIdempotent, retryOn });
    this.#routed = {
      retryPolicy: this.#retryPolicy,
      route: (r) => this.#route(r),
      bind: (r) => this.#bind(r),
      unbind: (r) => this.#unbind(r),
      settle: (r, outcome) => r.endpoint !== undefined && this.#settle(r.endpoint.key, r.startMs, outcome),
      retry: (r, reason) => this.#retry(r, reason),
    };
    this.#attempts = {
      retryPolicy: this.#retryPolicy,
      closed: () => this.#closed,
      pick: (exclude, hash) => this.#pickForConnection(exclude, hash),
      open: (endpoint) => this.#open(endpoint),
      settle: (key, startMs, outcome) => this.#settle(key, startMs, outcome),
      withdraw: (key, startMs, request) => this.#withdraw(key, startMs, request),
      retried: (reason) => this.#countRetry(reason),
      elsewhere: (key) => this.#elsewhere(key),
    };
    this.#clock = o.clock ?? systemClock;
    const random: Random = o.random ?? createRandom();
    this.#observer = o.observer;
    this.#bucketMs = o.statsWindowMs / WINDOW_BUCKETS;
    const gates = FeatureGates.parse(o.featureGates);
    this.mode = gates.enabled('RoundTripLoadBalancing') ? 'round-trip' : 'legacy';
    this.#balancer = new Balancer(balancerOptions(o, this.#clock, random));
    this.#internals = this.#makeInternals();
    if (o.outlierDetection !== false) {
      const balancer = this.#balancer;
      this.#outlier = new OutlierDetector(o.outlierDetection, {
        clock: this.#clock,
        onChange: (ejected) => balancer.setEjected(ejected),
        onEject: (key, ms) => this.#observer?.ejected?.(this.name, key, ms),
      });
    }
    this.#makeTransport = () =>
      new ClusterTransport(o, random, this.#clock, {
        opened: (key, known) => {
          const entry = known ? this.#entries.get(key) : undefined;
          if (entry !== undefined) entry.connectionsOpened++;
          this.#observer?.connectionOpened?.(this.name, key);
        },
        closed: (key, known, reason) => {
          this.#observer?.connectionClosed?.(this.name, key, reason);
          if (known) this.#forgetIfGone(key);
        },
      });
    if (typeof o.target === 'string') {
      this.source = createEndpointSource(o.target, { clock: this.#clock, ...(o.sourceOptions ?? {}) });
      this.#ownsSource = true;
    } else {
      this.source = o.target;
      this.#ownsSource = false;
    }
    this.#unsubscribe = this.source.subscribe((s) => this.#onSnapshot(s));
    this.#onSnapshot(this.source.snapshot());
  }

  /**
   * Sends one request. `opts` are undici dispatch options (`origin` names the Service as the
   * caller addressed it); `handler` may use either undici handler style (the cluster runs the
   * controller style; a callback-style handler is adapted by undici's own wrapper). Always
   * returns true: the cluster queues rather than pushing back.
   *
   * @example
   * cluster.dispatch({ origin: 'http://web.prod.svc', path: '/', method: 'GET' }, handler);
   */
  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const caller = controllerHandler(handler);
    const origin = opts.origin;
    const https =
      typeof origin === 'string'
        ? origin.charCodeAt(4) === 115 /* "https:" */
        : origin !== undefined && origin.protocol === 'https:';
    let sent = opts;
    if (this.mode === 'round-trip') {
      if (origin !== this.#lastOrigin) {
        this.#lastOrigin = origin;
        this.#lastAuthority = this.options.authority ?? (origin === undefined ? this.name : new URL(origin).host);
      }
      sent = forEndpoint(opts, this.#lastAuthority, https ? this.options.tls?.servername : undefined);
    }
    const request = new RoutedRequest(this.#routed, sent, caller, https);
    if (this.#closed) {
      request.fail(closedError(this.name));
      return true;
    }
    this.#requests++;
    this.#route(request);
    return true;
  }

  /** An undici `Dispatcher` view of this cluster (for `undici.request(url, { dispatcher })`). */
  get dispatcher(): Dispatcher {
    let d = this.#dispatcher;
    if (d === undefined) {
      d = new ClusterDispatcher(this);
      this.#dispatcher = d;
    }
    return d;
  }
  #dispatcher: Dispatcher | undefined;

  // ---- For evenlb's transports that manage their own connections (see `cluster-internals.ts`) ----

  #makeInternals(): ClusterInternals {
    return {
      balancer: this.#balancer,
      acquire: (exclude, hash) => {
        this.#requests++;
        return firstAttempt(this.#attempts, exclude, undefined, hash);
      },
      acquireUsable: (usable, hash) => {
        if (this.#closed) return closedError(this.name);
        if (this.#pending) return this.#pendingError();
        const ctx = hash === undefined ? this.#pick : { hash };
        const picked = pickUsable(this.#balancer.picker, ctx, usable, this.#usableFrom);
        if (picked === undefined) return undefined;
        if ('type' in picked) return noEndpointError(this.name, this.source, picked.reason);
        this.#requests++;
        return attemptOn(this.#attempts, picked, undefined, hash);
      },
      track: (endpoint) => {
        this.#requests++;
        return attemptOn(this.#attempts, endpoint);
      },
      pickForConnection: (exclude, hash) => this.#pickForConnection(exclude, hash),
      noteConnection: (key, change, reason) => this.#noteConnection(key, change, reason ?? 'peer', true),
      adoptConnection: (key) => this.#noteConnection(key, 'opened', 'peer', false),
      onEligibleChange: (listener) => this.#onEligibleChange(listener),
    };
  }

  #elsewhere(key: string | undefined): boolean {
    return this.#balancer.picker.endpoints.some((t) => t.endpoint.key !== key);
  }

  /** Starts an attempt's load record and window count on `endpoint`; returns its start time. */
  #open(endpoint: Endpoint): number {
    const startMs = this.#balancer.loads.get(endpoint.key).start();
    this.#entry(endpoint).window.add(Math.floor(startMs / this.#bucketMs));
    return startMs;
  }

  /**
   * Takes back the load record and window count an attempt started at `startMs` (it never
   * reached the endpoint); `request`: the request is not counted either.
   */
  #withdraw(key: string, startMs: number, request: boolean): void {
    this.#balancer.loads.peek(key)?.withdraw();
    this.#entries.get(key)?.window.add(Math.floor(startMs / this.#bucketMs), -1);
    if (request) this.#requests--;
    this.#forgetIfGone(key);
  }

  #entry(endpoint: Endpoint): EndpointEntry {
    let entry = this.#entries.get(endpoint.key);
    if (entry === undefined) {
      entry = new EndpointEntry(endpoint);
      this.#entries.set(endpoint.key, entry);
    }
    return entry;
  }

  #countRetry(reason: RetryReason): void {
    this.#retries++;
    this.#observer?.retried?.(this.name, reason);
  }

  /** Picks an endpoint without accounting a request (also the legacy, dial-time decision). */
  #pickForConnection(exclude?: string, hash?: number): Endpoint | EvenlbError {
    if (this.#closed) return closedError(this.name);
    return this.#pending ? this.#pendingError() : this.#pickEndpoint(exclude, hash);
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
    if (!this.#pending) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = this.#clock.setTimeout(() => {
        off();
        reject(this.#pendingError());
      }, this.options.discoveryTimeoutMs);
      const off = this.#onEligibleChange(() => {
        if (this.#pending) return;
        timer.cancel();
        off();
        resolve();
      });
    });
  }

  #onEligibleChange(listener: (eligible: ReadonlySet<string>) => void): () => void {
    this.#eligibleListeners.add(listener);
    return () => this.#eligibleListeners.delete(listener);
  }

  /** A connection another transport opened or closed; `report`: tell the observer (and count it as opened). */
  #noteConnection(endpointKey: string, change: 'opened' | 'closed', reason: CloseReason, report: boolean): void {
    const n = (this.#externalConnections.get(endpointKey) ?? 0) + (change === 'opened' ? 1 : -1);
    if (n > 0) this.#externalConnections.set(endpointKey, n);
    else this.#externalConnections.delete(endpointKey);
    if (!report) return;
    if (change === 'opened') {
      const endpoint = this.#entries.get(endpointKey)?.endpoint ?? this.#balancer.endpointSet.get(endpointKey);
      if (endpoint !== undefined) this.#entry(endpoint).connectionsOpened++;
      this.#observer?.connectionOpened?.(this.name, endpointKey);
    } else {
      this.#observer?.connectionClosed?.(this.name, endpointKey, reason);
      this.#forgetIfGone(endpointKey);
    }
  }

  /**
   * Stats per endpoint and for the whole cluster.
   *
   * @example
   * const { endpoints, window } = cluster.stats(); // window.imbalance.maxOverMean: 1 is perfectly even
   */
  stats(): ClusterStats {
    return collectClusterStats({
      name: this.name,
      target: this.source.target,
      mode: this.mode,
      policy: this.#balancer.policy.name,
      discovery: this.source.snapshot().status.state,
      requests: this.#requests,
      retries: this.#retries,
      windowMs: this.options.statsWindowMs,
      bucketMs: this.#bucketMs,
      nowMs: this.#clock.now(),
      balancer: this.#balancer,
      entries: this.#entries,
      poolsOf: (key) => this.#undici?.poolsOf(key) ?? [],
      pools: this.#undici?.legacyPools() ?? [].values(),
      externalConnections: this.#externalConnections,
      timesEjected: (key) => this.#outlier?.state(key).timesEjected ?? 0,
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
      await this.#undici?.close();
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
      await this.#undici?.destroy(error);
      if (this.#ownsSource) await this.source.close();
    });
  }

  #route(request: RoutedRequest): void {
    if (this.#closed) {
      request.fail(closedError(this.name));
      return;
    }
    if (this.#pending) {
      this.#wait(request);
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
    this.#entry(endpoint).window.add(Math.floor(startMs / this.#bucketMs));
    request.open(endpoint, startMs);
    this.#transport.connectionFor(endpoint, request.https).dispatch(request);
  }

  get #transport(): ClusterTransport {
    this.#undici ??= this.#makeTransport();
    return this.#undici;
  }

  #bind(request: RoutedRequest): void {
    const endpoint = request.connection?.endpoint;
    if (endpoint !== undefined) request.open(endpoint, this.#open(endpoint));
  }

  #unbind(request: RoutedRequest): void {
    if (request.endpoint !== undefined) this.#withdraw(request.endpoint.key, request.startMs, false);
  }

  #settle(key: string, startMs: number, outcome: RequestOutcome): void {
    const ok = outcome === 'success' || outcome === 'aborted';
    const now = this.#clock.now();
    const load = this.#balancer.loads.peek(key);
    if (load !== undefined) load.end(startMs, ok, now);
    if (outcome !== 'aborted') this.#outlier?.record(key, ok);
    this.#observer?.requestEnded?.(this.name, key, outcome, now - startMs);
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
    this.#countRetry(reason);
    if (this.mode === 'legacy') this.#legacyExclude = request.exclude;
    this.#route(request);
    return true;
  }

  #pendingError(): EvenlbError {
    return pendingError(this.name, this.source, this.options.discoveryTimeoutMs);
  }

  #wait(request: RoutedRequest): void {
    this.#waiting.add(request);
    request.waitTimer = this.#clock.setTimeout(() => {
      if (!this.#waiting.delete(request)) return;
      request.fail(this.#pendingError());
    }, this.options.discoveryTimeoutMs);
  }

  #onSnapshot(snapshot: DiscoverySnapshot): void {
    if (this.#closed) return;
    this.#balancer.update(snapshot.endpoints);
    this.#outlier?.setEndpoints(snapshot.endpoints);
    const eligible = eligibleKeys(snapshot.endpoints);
    for (const key of departedEndpoints(this.#entries.keys(), eligible)) this.#undici?.drainEndpoint(key);
    for (const [key, entry] of this.#entries) {
      entry.endpoint = snapshot.endpoints.get(key) ?? entry.endpoint;
      this.#forgetIfGone(key);
    }
    const discovered = snapshot.status.state !== 'pending' && this.#pending;
    if (discovered) this.#pending = false;
    for (const listener of [...this.#eligibleListeners]) listener(eligible);
    if (discovered) {
      const waiting = [...this.#waiting];
      this.#waiting.clear();
      for (const r of waiting) {
        r.waitTimer?.cancel();
        this.#route(r);
      }
    }
  }

  /** Drops an entry once its endpoint is gone and its pools have nothing left. */
  #forgetIfGone(key: string): void {
    if (!this.#entries.has(key) || this.#balancer.endpointSet.has(key) || this.#undici?.busy(key) === true) return;
    if ((this.#balancer.loads.peek(key)?.inFlight ?? 0) > 0) return;
    this.#entries.delete(key);
    this.#undici?.forget(key);
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
    const error = err ?? closedError(this.name);
    for (const r of this.#waiting) {
      r.waitTimer?.cancel();
      r.fail(error);
    }
    this.#waiting.clear();
    this.#unsubscribe();
    this.#eligibleListeners.clear();
    this.#outlier?.close();
    this.#balancer.close();
  }
}
