/**
 * What a cluster counts, for every transport alike: requests and retries, and per endpoint —
 * beside the balancer's load record — a sliding window of requests (imbalance figures), the
 * connections opened, and the connections other transports report (the proxy's sockets, gRPC
 * subchannels). An attempt's accounting starts, ends or is taken back only here, so a request
 * is counted once, the same way, whatever carried it; its end feeds outlier detection and the
 * observer. An endpoint's entry is dropped once discovery no longer knows it and nothing of it
 * is left (no request in flight, no connection of the cluster's own pools).
 *
 * An attempt's end also applies what its response said of the endpoint's load (pushback, the
 * load report when the policy reads reports; `load-feedback.ts`), before the load record ends,
 * so that a report and its request's end are seen together.
 */
import type { Balancer } from '../balancing/balancer.js';
import type { EndpointLoad } from '../balancing/endpoint-load.js';
import type { OutlierDetector } from '../balancing/outlier-detector.js';
import type { Clock } from '../core/clock.js';
import type { Endpoint } from '../core/endpoint.js';
import type { EndpointSet } from '../core/endpoint-set.js';
import type { CloseReason } from '../pool/lifetime-policy.js';
import type { ClusterObserver, RequestOutcome } from './cluster-options.js';
import type { ClusterStatsInput } from './cluster-stats.js';
import { EndpointEntry, WINDOW_BUCKETS } from './endpoint-entry.js';
import { type AttemptResponse, applyResponse } from './load-feedback.js';
import type { RetryReason } from './retry-policy.js';

/** What the ledger needs of its cluster. */
export interface LedgerParts {
  readonly name: string;
  readonly balancer: Balancer;
  readonly outlier: OutlierDetector | undefined;
  readonly observer: ClusterObserver | undefined;
  readonly clock: Clock;
  readonly statsWindowMs: number;
  /** True while the cluster's own pools still hold something of the endpoint. */
  poolsBusy(endpointKey: string): boolean;
  /** The cluster's own pools may forget the endpoint. */
  forgetPools(endpointKey: string): void;
}

export class ClusterLedger {
  /** Requests sent through the cluster, ever (retries not counted). */
  requests = 0;
  /** Extra attempts made. */
  retries = 0;
  /** Load reports recorded, and ignored as malformed. */
  readonly loadReports = { recorded: 0, ignored: 0 };
  /** True when the balancer's policy reads load reports (they are parsed only then). */
  readonly readsReports: boolean;
  readonly entries = new Map<string, EndpointEntry>();
  /** Connections other transports reported open, per endpoint key. */
  readonly external = new Map<string, number>();
  /** Width of one window bucket, ms. */
  readonly bucketMs: number;
  readonly #p: LedgerParts;

  constructor(parts: LedgerParts) {
    this.#p = parts;
    this.bucketMs = parts.statsWindowMs / WINDOW_BUCKETS;
    this.readsReports = parts.balancer.policy.loadSignals?.includes('reports') ?? false;
  }

  /** Counts in the window an attempt whose load record was started at `startMs` (the hot path's picker did). */
  counted(endpoint: Endpoint, startMs: number): void {
    this.#entry(endpoint).window.add(Math.floor(startMs / this.bucketMs));
  }

  /** Starts an attempt's load record and window count on `endpoint`; returns its start time. */
  open(endpoint: Endpoint): number {
    const startMs = this.#p.balancer.loads.get(endpoint.key).start();
    this.counted(endpoint, startMs);
    return startMs;
  }

  /**
   * Ends the load record started at `startMs` with `outcome`: what `response` said (pushback, its
   * load report), outlier detection, the observer.
   */
  settle(key: string, startMs: number, outcome: RequestOutcome, response?: AttemptResponse): void {
    const p = this.#p;
    const ok = outcome === 'success' || outcome === 'aborted';
    const now = p.clock.now();
    const load = p.balancer.loads.peek(key);
    if (response !== undefined && load !== undefined) this.#feedback(key, load, response, now);
    load?.end(startMs, ok, now);
    if (outcome !== 'aborted') p.outlier?.record(key, ok);
    p.observer?.requestEnded?.(p.name, key, outcome, now - startMs);
  }

  /**
   * Takes back the load record and window count an attempt started at `startMs` (it never
   * reached the endpoint); `request`: the request is not counted either.
   */
  withdraw(key: string, startMs: number, request: boolean): void {
    this.#p.balancer.loads.peek(key)?.withdraw();
    this.entries.get(key)?.window.add(Math.floor(startMs / this.bucketMs), -1);
    if (request) this.requests--;
    this.forgetIfGone(key);
  }

  #feedback(key: string, load: EndpointLoad, response: AttemptResponse, now: number): void {
    const applied = applyResponse(load, response, this.readsReports, now);
    const observer = this.#p.observer;
    if (applied.pushback) observer?.pushback?.(this.#p.name, key);
    if (applied.report === 'none') return;
    const recorded = applied.report === 'recorded';
    if (recorded) this.loadReports.recorded++;
    else this.loadReports.ignored++;
    observer?.loadReport?.(this.#p.name, key, recorded);
  }

  retried(reason: RetryReason): void {
    this.retries++;
    this.#p.observer?.retried?.(this.#p.name, reason);
  }

  /** A socket of the cluster's own pools opened; `known`: to an endpoint (not a legacy origin). */
  poolConnectionOpened(key: string, known: boolean): void {
    const entry = known ? this.entries.get(key) : undefined;
    if (entry !== undefined) entry.connectionsOpened++;
    this.#p.observer?.connectionOpened?.(this.#p.name, key);
  }

  poolConnectionClosed(key: string, known: boolean, reason: CloseReason): void {
    this.#p.observer?.connectionClosed?.(this.#p.name, key, reason);
    if (known) this.forgetIfGone(key);
  }

  /** A connection another transport opened or closed; `report`: tell the observer (and count it as opened). */
  noteConnection(key: string, change: 'opened' | 'closed', reason: CloseReason, report: boolean): void {
    const p = this.#p;
    const n = (this.external.get(key) ?? 0) + (change === 'opened' ? 1 : -1);
    if (n > 0) this.external.set(key, n);
    else this.external.delete(key);
    if (!report) return;
    if (change === 'opened') {
      const endpoint = this.entries.get(key)?.endpoint ?? p.balancer.endpointSet.get(key);
      if (endpoint !== undefined) this.#entry(endpoint).connectionsOpened++;
      p.observer?.connectionOpened?.(p.name, key);
    } else {
      p.observer?.connectionClosed?.(p.name, key, reason);
      this.forgetIfGone(key);
    }
  }

  /** Follows a new snapshot: entries take the endpoints' new conditions; gone ones are dropped when done. */
  follow(endpoints: EndpointSet): void {
    for (const [key, entry] of this.entries) {
      entry.endpoint = endpoints.get(key) ?? entry.endpoint;
      this.forgetIfGone(key);
    }
  }

  /** Drops an entry once its endpoint is gone and nothing of it is left. */
  forgetIfGone(key: string): void {
    const p = this.#p;
    if (!this.entries.has(key) || p.balancer.endpointSet.has(key) || p.poolsBusy(key)) return;
    if ((p.balancer.loads.peek(key)?.inFlight ?? 0) > 0) return;
    this.entries.delete(key);
    p.forgetPools(key);
  }

  /** What the cluster's stats read from here (the transport's pools and discovery are the cluster's). */
  statsParts(): Omit<ClusterStatsInput, 'target' | 'mode' | 'discovery' | 'poolsOf' | 'pools' | 'loadProbes'> {
    const p = this.#p;
    return {
      name: p.name,
      policy: p.balancer.policy.name,
      requests: this.requests,
      retries: this.retries,
      windowMs: p.statsWindowMs,
      bucketMs: this.bucketMs,
      nowMs: p.clock.now(),
      balancer: p.balancer,
      entries: this.entries,
      externalConnections: this.external,
      timesEjected: (key) => p.outlier?.state(key).timesEjected ?? 0,
      loadReports: this.loadReports,
    };
  }

  #entry(endpoint: Endpoint): EndpointEntry {
    let entry = this.entries.get(endpoint.key);
    if (entry === undefined) {
      entry = new EndpointEntry(endpoint);
      this.entries.set(endpoint.key, entry);
    }
    return entry;
  }
}
