/**
 * A `Cluster` is everything needed to send requests to one Service: an endpoint source, the
 * shared `Balancer` (one pick per request), passive outlier detection, one connection pool per
 * endpoint governed by the shared `LifetimePolicy`, and stats. The `BalancedAgent` holds one
 * per route; the proxy holds one per upstream.
 *
 * `dispatch(opts, handler)` takes undici dispatch options and a handler in either undici
 * style. In round-trip mode (the `RoundTripLoadBalancing` gate, on by default) each request:
 * picks an endpoint → goes to `scheme://ip:port` over that endpoint's pool, with the `Host`
 * header kept as the original authority (TLS SNI and certificate checks follow it, never the
 * IP) → counts in the endpoint's load record from pick to end → feeds the outlier detector. A
 * connect failure is retried once on a different endpoint. When an endpoint leaves the
 * eligible set its pool drains: no new requests, idle sockets close at once, in-flight ones
 * finish.
 *
 * With the gate off (legacy mode) the cluster reproduces the behaviour kube-apiserver had:
 * ONE pool keyed by the request origin (the Service name); the endpoint is picked only when a
 * connection is dialled; idle connections are reused whatever discovery says.
 *
 * No eligible endpoint fails the request at once with `EVENLB_NO_ENDPOINTS` (or
 * `EVENLB_SERVICE_NOT_FOUND`); while discovery has not answered yet a request waits up to
 * `discoveryTimeoutMs`, then fails with `EVENLB_DISCOVERY_PENDING`.
 *
 * @example
 * const cluster = new Cluster({ name: 'webhook', target: 'static:///10.0.0.1:8443,10.0.0.2:8443',
 *   tls: { ca }, maxRequestsPerConnection: 100 });
 * const res = await request('https://webhook.policy.svc:8443/validate', { dispatcher: cluster.dispatcher });
 * await cluster.close();
 */
import type { Dispatcher } from 'undici';
import { Balancer } from '../balancing/balancer.js';
import { OutlierDetector } from '../balancing/outlier-detector.js';
import type { PickContext } from '../balancing/picker.js';
import { type Clock, systemClock } from '../core/clock.js';
import type { Endpoint } from '../core/endpoint.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { FeatureGates } from '../core/feature-gates.js';
import { createRandom, type Random } from '../core/random.js';
import { Shutdown } from '../core/shutdown.js';
import { createEndpointSource } from '../discovery/create-endpoint-source.js';
import type { DiscoverySnapshot, EndpointSource } from '../discovery/endpoint-source.js';
import type { EndpointPool, EndpointPoolEvents } from '../pool/endpoint-pool.js';
import { type CloseReason, LifetimePolicy } from '../pool/lifetime-policy.js';
import { ClusterDispatcher } from './cluster-dispatcher.js';
import {
  type ClusterObserver,
  type ClusterOptions,
  type ParsedClusterOptions,
  parseClusterOptions,
  type RequestOutcome,
} from './cluster-options.js';
import { type ClusterStats, collectClusterStats } from './cluster-stats.js';
import { ClusterTransport } from './cluster-transport.js';
import { EndpointEntry, WINDOW_BUCKETS } from './endpoint-entry.js';
import { toLegacyHandler } from './handler-adapters.js';
import { withHost } from './request-headers.js';
import { RetryPolicy, type RetryReason } from './retry-policy.js';
import { type RequestRouter, RoutedRequest } from './routed-request.js';

/** One request sent by a transport the cluster does not own; see `Cluster.acquire()`. */
export interface RequestTicket {
  readonly endpoint: Endpoint;
  /** Ends the request's accounting (load, outlier detection, metrics); later calls are ignored. */
  end(outcome: RequestOutcome): void;
}

export { failHandler, toLegacyHandler } from './handler-adapters.js';

export class Cluster {
  readonly name: string;
  readonly options: ParsedClusterOptions;
  readonly balancer: Balancer;
  readonly source: EndpointSource;
  /** `round-trip` (pick per request) or `legacy` (pick per dialled connection). */
  readonly mode: 'round-trip' | 'legacy';
  readonly retryIdempotent: number;
  /** What is retried, where and how often — for every transport of this cluster. */
  readonly retryPolicy: RetryPolicy;
  readonly #clock: Clock;
  readonly #ownsSource: boolean;
  readonly #outlier: OutlierDetector | undefined;
  readonly #transport: ClusterTransport;
  readonly #observer: ClusterObserver | undefined;
  readonly #entries = new Map<string, EndpointEntry>();
  readonly #legacyPools = new Map<string, EndpointPool>();
  readonly #waiting = new Set<RoutedRequest>();
  readonly #eligibleListeners = new Set<(eligible: ReadonlySet<string>) => void>();
  readonly #externalConnections = new Map<string, number>();
  readonly #pick: PickContext = {};
  /** What routed requests call back into (kept off the public surface). */
  readonly #router: RequestRouter;
  readonly #bucketMs: number;
  readonly #unsubscribe: () => void;
  #pending = true;
  #legacyExclude: string | undefined;
  #lastOrigin: unknown;
  #lastAuthority = '';
  #requests = 0;
  #retries = 0;
  #closed = false;
  readonly #shutdown = new Shutdown();

  constructor(input: ClusterOptions) {
    const o = parseClusterOptions(input);
    this.options = o;
    this.name = o.name;
    this.retryIdempotent = o.retryIdempotent;
    this.retryPolicy = new RetryPolicy({ retryIdempotent: o.retryIdempotent, retryOn: o.retryOn });
    this.#router = {
      retryPolicy: this.retryPolicy,
      route: (r) => this.#route(r),
      bind: (r) => this.#bind(r),
      unbind: (r) => this.#unbind(r),
      settle: (r, outcome) => this.#settleRequest(r, outcome),
      retry: (r, reason) => this.#retry(r, reason),
    };
    this.#clock = o.clock ?? systemClock;
    const random: Random = o.random ?? createRandom();
    this.#observer = o.observer;
    this.#bucketMs = o.statsWindowMs / WINDOW_BUCKETS;
    const gates = FeatureGates.parse(o.featureGates);
    this.mode = gates.enabled('RoundTripLoadBalancing') ? 'round-trip' : 'legacy';
    this.balancer = new Balancer({
      policy: o.policy,
      policyOptions: o.policyOptions,
      clock: this.#clock,
      random,
    });
    const lifetime = new LifetimePolicy(
      {
        maxRequestsPerConnection: o.maxRequestsPerConnection,
        maxConnectionAgeMs: o.maxConnectionAgeMs,
        ageJitter: o.ageJitter,
        idleTimeoutMs: o.idleTimeoutMs,
      },
      random,
      `cluster ${o.name}`,
    );
    if (o.outlierDetection !== false) {
      const balancer = this.balancer;
      this.#outlier = new OutlierDetector(o.outlierDetection, {
        clock: this.#clock,
        onChange: (ejected) => balancer.setEjected(ejected),
        onEject: (key, ms) => this.#observer?.ejected?.(this.name, key, ms),
      });
    }
    const poolEvents: EndpointPoolEvents = {
      onConnectionOpen: (pool, conn) => {
        const key = conn.endpoint?.key ?? pool.origin;
        const entry = conn.endpoint === undefined ? undefined : this.#entries.get(conn.endpoint.key);
        if (entry !== undefined) entry.connectionsOpened++;
        this.#observer?.connectionOpened?.(this.name, key);
      },
      onConnectionClose: (pool, conn, reason: CloseReason) => {
        this.#observer?.connectionClosed?.(this.name, conn.endpoint?.key ?? pool.origin, reason);
        if (conn.endpoint !== undefined) this.#forgetIfGone(conn.endpoint.key);
      },
    };
    this.#transport = new ClusterTransport(o, lifetime, this.#clock, poolEvents);
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
   * caller addressed it); `handler` may use either undici handler style. Always returns true:
   * the cluster queues rather than pushing back.
   */
  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const legacy = toLegacyHandler(handler);
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
      sent = { ...opts, headers: withHost(opts.headers, this.#lastAuthority) };
      const servername = this.options.tls?.servername;
      if (https && servername !== undefined && (opts as { servername?: string }).servername === undefined) {
        (sent as { servername?: string }).servername = servername;
      }
    }
    const request = new RoutedRequest(this.#router, sent, legacy, https);
    if (this.#closed) {
      request.fail(new EvenlbError(ErrorCodes.CLOSED, `cluster ${this.name} is closed`));
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

  // ---- For transports that manage their own connections (node:http agents, proxies) ----

  /**
   * Picks an endpoint for one request sent by another transport and starts its accounting;
   * call `ticket.end(outcome)` exactly once when it ends. `exclude` avoids one endpoint (a
   * retry). Returns an `EvenlbError` (`EVENLB_NO_ENDPOINTS`, `EVENLB_SERVICE_NOT_FOUND`,
   * `EVENLB_DISCOVERY_PENDING`, `EVENLB_CLOSED`) when nothing can be picked.
   */
  acquire(exclude?: string): RequestTicket | EvenlbError {
    if (this.#closed) return new EvenlbError(ErrorCodes.CLOSED, `cluster ${this.name} is closed`);
    if (this.#pending) return this.#pendingError();
    const ctx = this.#pick;
    ctx.exclude = exclude;
    const picked = this.balancer.picker.pick(ctx);
    if (picked.type === 'none') return this.#noEndpointError(picked.reason);
    return this.track(picked.endpoint);
  }

  /** Starts accounting for a request already bound to `endpoint` (legacy mode: the socket's). */
  track(endpoint: Endpoint): RequestTicket {
    const key = endpoint.key;
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      entry = new EndpointEntry(endpoint);
      this.#entries.set(key, entry);
    }
    this.#requests++;
    const startMs = this.balancer.loads.get(key).start();
    entry.window.add(Math.floor(startMs / this.#bucketMs));
    let open = true;
    return {
      endpoint,
      end: (outcome: RequestOutcome) => {
        if (!open) return;
        open = false;
        this.#settle(key, startMs, outcome);
      },
    };
  }

  /**
   * Picks the endpoint for a new connection without accounting a request (the legacy,
   * dial-time decision).
   */
  pickForConnection(exclude?: string): Endpoint | EvenlbError {
    if (this.#closed) return new EvenlbError(ErrorCodes.CLOSED, `cluster ${this.name} is closed`);
    if (this.#pending) return this.#pendingError();
    const ctx = this.#pick;
    ctx.exclude = exclude;
    const picked = this.balancer.picker.pick(ctx);
    return picked.type === 'none' ? this.#noEndpointError(picked.reason) : picked.endpoint;
  }

  /** Resolves once discovery has answered (at once if it has); rejects after `discoveryTimeoutMs`. */
  whenDiscovered(): Promise<void> {
    if (!this.#pending) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = this.#clock.setTimeout(() => {
        off();
        reject(this.#pendingError());
      }, this.options.discoveryTimeoutMs);
      const off = this.onEligibleChange(() => {
        if (this.#pending) return;
        timer.cancel();
        off();
        resolve();
      });
    });
  }

  /**
   * Calls `listener` with the eligible endpoint keys after every discovery update; a transport
   * drains its connections to endpoints that are not in the set. Returns an unsubscribe function.
   */
  onEligibleChange(listener: (eligible: ReadonlySet<string>) => void): () => void {
    this.#eligibleListeners.add(listener);
    return () => this.#eligibleListeners.delete(listener);
  }

  /** Reports a connection another transport opened or closed to `endpointKey` (stats and metrics). */
  noteConnection(endpointKey: string, change: 'opened' | 'closed', reason: CloseReason = 'peer'): void {
    const n = (this.#externalConnections.get(endpointKey) ?? 0) + (change === 'opened' ? 1 : -1);
    if (n > 0) this.#externalConnections.set(endpointKey, n);
    else this.#externalConnections.delete(endpointKey);
    if (change === 'opened') {
      const entry = this.#entries.get(endpointKey);
      if (entry !== undefined) entry.connectionsOpened++;
      this.#observer?.connectionOpened?.(this.name, endpointKey);
    } else {
      this.#observer?.connectionClosed?.(this.name, endpointKey, reason);
    }
  }

  /** Stats per endpoint and for the whole cluster. */
  stats(): ClusterStats {
    return collectClusterStats({
      name: this.name,
      target: this.source.target,
      mode: this.mode,
      policy: this.balancer.policy.name,
      discovery: this.source.snapshot().status.state,
      requests: this.#requests,
      retries: this.#retries,
      windowMs: this.options.statsWindowMs,
      bucketMs: this.#bucketMs,
      nowMs: this.#clock.now(),
      balancer: this.balancer,
      entries: this.#entries,
      pools: this.#legacyPools.values(),
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
      await Promise.all(this.#allPools().map((p) => p.close()));
      if (this.#ownsSource) await this.source.close();
    });
  }

  /**
   * Abrupt: queued and in-flight requests fail with `err` (default `EVENLB_CLOSED`), sockets are
   * destroyed. Settles a pending `close()` too. Idempotent.
   */
  destroy(err?: Error): Promise<void> {
    return this.#shutdown.destroy(async () => {
      const error = err ?? new EvenlbError(ErrorCodes.CLOSED, `cluster ${this.name} was destroyed`);
      this.#stop(error);
      await Promise.all(this.#allPools().map((p) => p.destroy(error)));
      if (this.#ownsSource) await this.source.close();
    });
  }

  // ---- The router RoutedRequests call back into ----

  #route(request: RoutedRequest): void {
    if (this.#closed) {
      request.fail(new EvenlbError(ErrorCodes.CLOSED, `cluster ${this.name} is closed`));
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
    const ctx = this.#pick;
    ctx.exclude = request.exclude;
    const picked = this.balancer.picker.pick(ctx);
    if (picked.type === 'none') {
      request.fail(this.#noEndpointError(picked.reason));
      return;
    }
    const endpoint = picked.endpoint;
    let entry = this.#entries.get(endpoint.key);
    if (entry === undefined) {
      entry = new EndpointEntry(endpoint);
      this.#entries.set(endpoint.key, entry);
    }
    request.open(endpoint, picked.load.start());
    entry.window.add(Math.floor(request.startMs / this.#bucketMs));
    let pool = request.https ? entry.https : entry.http;
    if (pool === undefined || pool.draining) {
      pool = this.#transport.createPool(endpoint, request.https);
      if (request.https) entry.https = pool;
      else entry.http = pool;
    }
    pool.dispatch(request);
  }

  #bind(request: RoutedRequest): void {
    const endpoint = request.connection?.endpoint;
    if (endpoint === undefined) return;
    let entry = this.#entries.get(endpoint.key);
    if (entry === undefined) {
      entry = new EndpointEntry(endpoint);
      this.#entries.set(endpoint.key, entry);
    }
    const start = this.balancer.loads.get(endpoint.key).start();
    request.open(endpoint, start);
    entry.window.add(Math.floor(start / this.#bucketMs));
  }

  #unbind(request: RoutedRequest): void {
    const key = request.endpoint?.key;
    if (key === undefined) return;
    const load = this.balancer.loads.peek(key);
    if (load !== undefined) {
      if (load.inFlight > 0) load.inFlight--;
      if (load.requests > 0) load.requests--;
    }
  }

  #settleRequest(request: RoutedRequest, outcome: RequestOutcome): void {
    const endpoint = request.endpoint;
    if (endpoint !== undefined) this.#settle(endpoint.key, request.startMs, outcome);
  }

  #settle(key: string, startMs: number, outcome: RequestOutcome): void {
    const ok = outcome === 'success' || outcome === 'aborted';
    const load = this.balancer.loads.peek(key);
    if (load !== undefined) load.end(startMs, ok);
    if (outcome !== 'aborted') this.#outlier?.record(key, ok);
    const observer = this.#observer;
    if (observer?.requestEnded !== undefined) {
      observer.requestEnded(this.name, key, outcome, this.#clock.now() - startMs);
    }
  }

  /**
   * Sends `request` again, counted once (`retries`, observer `retried`). It goes to another
   * endpoint; a stale kept-alive connection may be retried on the same endpoint when it is
   * the only one (a new connection will be dialled).
   */
  #retry(request: RoutedRequest, reason: RetryReason): boolean {
    if (this.#closed) return false;
    const failed = request.endpoint?.key;
    const elsewhere = this.balancer.picker.endpoints.some((t) => t.endpoint.key !== failed);
    if (!elsewhere && reason !== 'reused-connection') return false;
    request.prepareRetry();
    if (!elsewhere) request.exclude = undefined;
    this.#retries++;
    this.#observer?.retried?.(this.name, reason);
    if (this.mode === 'legacy') this.#legacyExclude = request.exclude;
    this.#route(request);
    return true;
  }

  // ---- internals ----

  #noEndpointError(reason: string): EvenlbError {
    const status = this.source.snapshot().status;
    if (status.state === 'not-found') {
      return new EvenlbError(ErrorCodes.SERVICE_NOT_FOUND, `route ${this.name}: ${status.error.message}`, {
        cause: status.error,
        details: { route: this.name, target: this.source.target },
      });
    }
    const why =
      reason === 'none-ready'
        ? 'no endpoint is ready'
        : reason === 'all-ejected'
          ? 'every endpoint is ejected by outlier detection'
          : 'discovery knows no endpoint';
    return new EvenlbError(ErrorCodes.NO_ENDPOINTS, `route ${this.name} (${this.source.target}): ${why}`, {
      ...(status.state === 'degraded' ? { cause: status.error } : {}),
      details: { route: this.name, target: this.source.target, reason },
    });
  }

  #pendingError(): EvenlbError {
    return new EvenlbError(
      ErrorCodes.DISCOVERY_PENDING,
      `route ${this.name} (${this.source.target}): discovery gave no answer within ${this.options.discoveryTimeoutMs} ms`,
      { details: { route: this.name, target: this.source.target } },
    );
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
    this.balancer.update(snapshot.endpoints);
    this.#outlier?.setEndpoints(snapshot.endpoints);
    const eligible = new Set<string>();
    for (const e of snapshot.endpoints.eligible()) eligible.add(e.key);
    for (const [key, entry] of this.#entries) {
      const now = snapshot.endpoints.get(key);
      if (now !== undefined) entry.endpoint = now;
      if (!eligible.has(key)) {
        // Left the eligible set: no new requests, idle sockets close now, in-flight finish.
        for (const pool of entry.pools()) pool.drain(now === undefined ? 'endpoint-removed' : 'endpoint-removed');
      }
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
    const entry = this.#entries.get(key);
    if (entry === undefined || this.balancer.endpointSet.has(key)) return;
    for (const pool of entry.pools()) {
      if (pool.queued > 0) return;
      for (const c of pool.connections()) if (!c.closed) return;
    }
    if ((this.balancer.loads.peek(key)?.inFlight ?? 0) > 0) return;
    // Legacy mode keeps using connections to endpoints discovery dropped: keep them visible.
    for (const pool of this.#legacyPools.values()) {
      for (const c of pool.connections()) if (!c.closed && c.endpoint?.key === key) return;
    }
    this.#entries.delete(key);
  }

  #legacyPool(request: RoutedRequest): EndpointPool {
    const origin = request.opts.origin;
    const key = typeof origin === 'string' ? origin : String(origin);
    let pool = this.#legacyPools.get(key);
    if (pool === undefined) {
      pool = this.#transport.createLegacyPool(new URL(key).origin, request.https, () => {
        const ctx = this.#pick;
        ctx.exclude = this.#legacyExclude;
        this.#legacyExclude = undefined;
        const picked = this.balancer.picker.pick(ctx);
        if (picked.type === 'none') return this.#noEndpointError(picked.reason);
        return picked.endpoint;
      });
      this.#legacyPools.set(key, pool);
    }
    return pool;
  }

  /** Refuses new work and fails requests still waiting for discovery (shared by close and destroy). */
  #stop(err: Error | undefined): void {
    if (this.#closed) return;
    this.#closed = true;
    const closedError = err ?? new EvenlbError(ErrorCodes.CLOSED, `cluster ${this.name} is closed`);
    for (const r of this.#waiting) {
      r.waitTimer?.cancel();
      r.fail(closedError);
    }
    this.#waiting.clear();
    this.#unsubscribe();
    this.#eligibleListeners.clear();
    this.#outlier?.close();
  }

  #allPools(): EndpointPool[] {
    const pools = [...this.#legacyPools.values()];
    for (const entry of this.#entries.values()) pools.push(...entry.pools());
    return pools;
  }
}
