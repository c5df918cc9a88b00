/**
 * The proxy's Prometheus instruments, all named here (`evenlb_proxy_*`), and the proxy's stats:
 * each cluster's `ClusterStats` (the one model, from `Cluster.stats()`: per-endpoint requests,
 * in-flight, errors, connections, state, read at scrape time, so the hot path pays nothing for
 * them) with what only the proxy measures:
 * - the window fields (`windowRequests`, `window`, `zones`) over the proxy's own sliding window
 *   (`imbalanceWindowMs`), from per-endpoint request counts sampled once a second, so requests
 *   of every transport (HTTP/1.1, HTTP/2, TCP) count;
 * - `p50Ms` / `p99Ms` per endpoint over the same window, from the upstream latency histogram
 *   (observed per upstream attempt).
 * The imbalance gauges (max/mean, coefficient of variation, Jain's index from `imbalance()`)
 * read `window.imbalance`. `stats()` gives the same figures as JSON for `/endpoints`,
 * `/api/stats` and the dashboard.
 */
import { Counter, collectDefaultMetrics, Gauge, type Metric, Registry } from 'prom-client';
import { type ClusterStats, type EndpointStats, windowImbalance, zoneStats } from '../cluster/cluster-stats.js';
import { type Clock, systemClock, type TimerHandle } from '../core/clock.js';
import {
  bucketQuantileMs,
  LATENCY_BUCKETS_S,
  type LatencyCounts,
  latencyHistogram,
  windowBuckets,
} from './latency-buckets.js';
import { registerClusterFamilies } from './proxy-cluster-families.js';
import { proxyMetricNames } from './proxy-metric-names.js';

export { bucketQuantileMs, LATENCY_BUCKETS_S, proxyMetricNames };

/** What the metrics read from one cluster. */
export interface ClusterView {
  readonly name: string;
  /** The cluster's stats (the proxy's `ProxyCluster.stats()`): connections of every transport included. */
  stats(): ClusterStats;
}

interface Sample {
  readonly atMs: number;
  readonly counts: ReadonlyMap<string, number>;
  /** Each endpoint's latency bucket counts at `atMs` (copies), for windowed quantiles. */
  readonly latency: ReadonlyMap<string, Float64Array>;
}

const CODE_CLASSES = ['aborted', '1xx', '2xx', '3xx', '4xx', '5xx'];

/**
 * A load-reporting listener's counts (`listeners[].loadReport`): plain numbers its data path adds
 * to, bound once per listener (`ProxyMetrics.loadReportCounts`), exposed at scrape — no label
 * lookup or allocation per request.
 */
export interface LoadReportCounts {
  /** Responses to which the listener added its own `endpoint-load-metrics` report. */
  attached: number;
  /** Responses that already carried the app's own report, passed through unchanged. */
  passed: number;
  /** Reads of the listener's load document (load probes; with fair share, its peers' reads too). */
  probes: number;
}

/** One endpoint as the proxy serves it: the cluster's `EndpointStats` and what the proxy measures. */
export interface ProxyEndpointStats extends EndpointStats {
  /**
   * Measured upstream latency over the sliding window, ms, from the latency histogram (linear
   * within a bucket, like Prometheus' `histogram_quantile`); null with no request in the window.
   * (`latencyMs` is the balancer's estimate, its EWMA: what picks use, not a measurement.)
   */
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
}

/**
 * One cluster as the proxy serves it (`/endpoints`, `/api/stats`, the dashboard, the gauges):
 * the cluster's `ClusterStats`, its window fields measured over the proxy's window.
 */
export interface ProxyClusterStats extends ClusterStats {
  readonly endpoints: readonly ProxyEndpointStats[];
}

/**
 * prom-client's event-loop lag sampling period, ms. Its default, 10 ms, woke an idle proxy a
 * hundred times a second (an idle sidecar was scheduled 102 times a second, 17 at 100 ms:
 * test/proxy/proxy-idle-wakeups.test.ts); at 100 ms the lag gauges still catch every longer stall.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

export interface ProxyMetricsOptions {
  readonly windowMs: number;
  readonly clock?: Clock;
  /** Adds prom-client's process metrics (CPU, memory, event loop lag). Default true. */
  readonly processMetrics?: boolean;
}

export class ProxyMetrics {
  readonly registry = new Registry();
  readonly #clusters: () => readonly ClusterView[];
  readonly #clock: Clock;
  readonly #windowMs: number;
  readonly #samples = new Map<string, Sample[]>();
  readonly #ejectionsCounter: Counter<'cluster' | 'endpoint'>;
  /** Latency buckets per `cluster\0endpoint`: plain counters on the hot path, exposed at scrape. */
  readonly #latency = new Map<string, LatencyCounts>();
  readonly #latencyByCluster = new Map<string, Map<string, LatencyCounts>>();
  #lastCluster: string | undefined;
  #lastLatency: Map<string, LatencyCounts> | undefined;
  /** Answered requests per listener, indexed by status class (0 = aborted, 1..5 = 1xx..5xx). */
  readonly #answered = new Map<string, Float64Array>();
  /** Load-report counts per reporting listener; kept across reloads (the counters never decrease). */
  readonly #loadReports = new Map<string, LoadReportCounts>();
  readonly #rejected: Counter<'listener' | 'reason'>;
  readonly #closedConnections: Counter<'listener' | 'reason'>;
  readonly #retries: Counter<'cluster' | 'reason'>;
  readonly #connections: Gauge<'listener'>;
  readonly #connectionsOpened: Counter<'listener'>;
  readonly reloads: Counter<'result'>;
  #timer: TimerHandle | undefined;
  #statsCache: { readonly atMs: number; readonly stats: ProxyClusterStats[] } | undefined;
  #closed = false;

  constructor(clusters: () => readonly ClusterView[], options: ProxyMetricsOptions) {
    this.#clusters = clusters;
    this.#clock = options.clock ?? systemClock;
    this.#windowMs = options.windowMs;
    const r = this.registry;
    if (options.processMetrics ?? true)
      collectDefaultMetrics({ register: r, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    const n = proxyMetricNames;
    const families = registerClusterFamilies(r, () => this.stats());
    this.#ejectionsCounter = families.ejections;
    this.#retries = families.retries;
    r.registerMetric(latencyHistogram(n.upstreamDuration, this.#latency) as unknown as Metric<string>);
    const answered = this.#answered;
    new Counter({
      name: n.downstreamRequests,
      help: 'Requests answered per listener and status class.',
      labelNames: ['listener', 'code'],
      registers: [r],
      collect(this: Counter<'listener' | 'code'>) {
        this.reset();
        for (const [listener, counts] of answered) {
          counts.forEach((v, i) => {
            if (v > 0 || i === 2) this.inc({ listener, code: CODE_CLASSES[i] as string }, v);
          });
        }
      },
    });
    const loadReports = this.#loadReports;
    new Counter({
      name: n.loadReports,
      help: 'Responses of a load-reporting listener (loadReport) carrying an endpoint-load-metrics report, by source: proxy (the listener added its own) or app (the app sent one, passed through).',
      labelNames: ['listener', 'source'],
      registers: [r],
      collect(this: Counter<'listener' | 'source'>) {
        this.reset();
        for (const [listener, counts] of loadReports) {
          this.inc({ listener, source: 'proxy' }, counts.attached);
          this.inc({ listener, source: 'app' }, counts.passed);
        }
      },
    });
    new Counter({
      name: n.loadProbes,
      help: "Reads of a load-reporting listener's load document (load probes; on the fair-share load port, peers' reads too).",
      labelNames: ['listener'],
      registers: [r],
      collect(this: Counter<'listener'>) {
        this.reset();
        for (const [listener, counts] of loadReports) this.inc({ listener }, counts.probes);
      },
    });
    this.#rejected = new Counter({
      name: n.rejected,
      help: 'Requests the proxy refused itself (bad request, no route, no endpoint).',
      labelNames: ['listener', 'reason'],
      registers: [r],
    });
    this.#closedConnections = new Counter({
      name: n.downstreamClosed,
      help: 'Client connections the proxy closed itself, by reason: the deadline that expired (first-byte, tls-handshake, request-head, request-body, request, idle, h2-idle, h2-ping) or connection-limit (the oldest idle one, to make room at maxConnections).',
      labelNames: ['listener', 'reason'],
      registers: [r],
    });
    this.#connections = new Gauge({
      name: n.downstreamConnections,
      help: 'Open client connections per listener.',
      labelNames: ['listener'],
      registers: [r],
    });
    this.#connectionsOpened = new Counter({
      name: n.downstreamConnectionsOpened,
      help: 'Client connections accepted per listener (with shedding on, its rate is the reconnect rate).',
      labelNames: ['listener'],
      registers: [r],
    });
    this.reloads = new Counter({
      name: n.configReloads,
      help: 'Configuration reloads by result.',
      labelNames: ['result'],
      registers: [r],
    });
    for (const result of ['ok', 'error', 'invalid']) this.reloads.inc({ result }, 0);
    this.#sample();
  }

  /** Creates a listener's series at zero, so dashboards see them before the first event. */
  initListener(listener: string): void {
    this.#connections.inc({ listener }, 0);
    this.#connectionsOpened.inc({ listener }, 0);
    this.#rejected.inc({ listener, reason: 'bad-request' }, 0);
    if (!this.#answered.has(listener)) this.#answered.set(listener, new Float64Array(6));
  }

  /**
   * The load-report counts of `listener` (created at zero on first call, the same object after,
   * across reloads): a reporting listener binds it once and adds to its fields.
   */
  loadReportCounts(listener: string): LoadReportCounts {
    let counts = this.#loadReports.get(listener);
    if (counts === undefined) {
      counts = { attached: 0, passed: 0, probes: 0 };
      this.#loadReports.set(listener, counts);
    }
    return counts;
  }

  /** Records one upstream attempt's duration. */
  observeUpstream(cluster: string, endpoint: string, durationMs: number): void {
    // One-entry cache: consecutive requests usually share a cluster, and a string key per
    // request would cost more than the observation itself.
    let byEndpoint = this.#lastLatency;
    if (this.#lastCluster !== cluster || byEndpoint === undefined) {
      byEndpoint = this.#latencyByCluster.get(cluster);
      if (byEndpoint === undefined) {
        byEndpoint = new Map();
        this.#latencyByCluster.set(cluster, byEndpoint);
      }
      this.#lastCluster = cluster;
      this.#lastLatency = byEndpoint;
    }
    let counts = byEndpoint.get(endpoint);
    if (counts === undefined) {
      counts = { cluster, endpoint, buckets: new Float64Array(LATENCY_BUCKETS_S.length), sum: 0, count: 0 };
      byEndpoint.set(endpoint, counts);
      this.#latency.set(`${cluster}\u0000${endpoint}`, counts);
    }
    const s = durationMs / 1000;
    counts.sum += s;
    counts.count++;
    const b = counts.buckets;
    for (let i = 0; i < LATENCY_BUCKETS_S.length; i++) {
      if (s <= (LATENCY_BUCKETS_S[i] as number)) {
        b[i] = (b[i] as number) + 1;
        break;
      }
    }
  }

  /** Records one answered downstream request. */
  observeDownstream(listener: string, status: number): void {
    let counts = this.#answered.get(listener);
    if (counts === undefined) {
      counts = new Float64Array(6);
      this.#answered.set(listener, counts);
    }
    const i = status >= 100 && status < 600 ? Math.floor(status / 100) : 0;
    counts[i] = (counts[i] as number) + 1;
  }

  /** Records one outlier ejection. */
  ejected(cluster: string, endpoint: string): void {
    this.#ejectionsCounter.inc({ cluster, endpoint });
  }

  /** Records one retry of an upstream attempt (the cluster's retry policy chose to send it again). */
  retried(cluster: string, reason: string): void {
    this.#retries.inc({ cluster, reason });
  }

  rejected(listener: string, reason: string): void {
    this.#rejected.inc({ listener, reason });
  }

  /** Counts a client connection the proxy closed itself (a deadline, or room made at `maxConnections`). */
  closedBy(listener: string, reason: string): void {
    this.#closedConnections.inc({ listener, reason });
  }

  connectionOpened(listener: string): void {
    this.#connections.inc({ listener });
    this.#connectionsOpened.inc({ listener });
  }

  connectionClosed(listener: string): void {
    this.#connections.dec({ listener });
  }

  /**
   * Each cluster's stats as the proxy serves them (`/endpoints`, `/api/stats`, the dashboard and
   * every per-endpoint and per-cluster gauge): `Cluster.stats()`, with `windowRequests`, `window`
   * and `zones` over this sliding window, and the measured `p50Ms`/`p99Ms`.
   */
  stats(): ProxyClusterStats[] {
    const now = this.#clock.now();
    // One scrape reads the figures once per instrument: compute them once per 100 ms.
    const cached = this.#statsCache;
    if (cached !== undefined && now - cached.atMs < 100) return cached.stats;
    const out: ProxyClusterStats[] = [];
    for (const c of this.#clusters()) {
      const base = c.stats();
      const oldest = this.#samples.get(c.name)?.[0];
      const measured = this.#latencyByCluster.get(c.name);
      const endpoints = base.endpoints.map((e): ProxyEndpointStats => {
        const window = windowBuckets(measured?.get(e.key)?.buckets, oldest?.latency.get(e.key));
        return {
          ...e,
          windowRequests: e.requests - (oldest?.counts.get(e.key) ?? 0),
          p50Ms: bucketQuantileMs(window, 0.5),
          p99Ms: bucketQuantileMs(window, 0.99),
        };
      });
      out.push({
        ...base,
        endpoints,
        window: { windowMs: this.#windowMs, imbalance: windowImbalance(endpoints) },
        zones: zoneStats(endpoints),
      });
    }
    this.#statsCache = { atMs: now, stats: out };
    return out;
  }

  #sample(): void {
    if (this.#closed) return;
    const now = this.#clock.now();
    for (const c of this.#clusters()) {
      const counts = new Map<string, number>();
      for (const e of c.stats().endpoints) counts.set(e.key, e.requests);
      const latency = new Map<string, Float64Array>();
      for (const [key, l] of this.#latencyByCluster.get(c.name) ?? []) latency.set(key, l.buckets.slice());
      let list = this.#samples.get(c.name);
      if (list === undefined) {
        list = [];
        this.#samples.set(c.name, list);
      }
      list.push({ atMs: now, counts, latency });
      while (list.length > 1 && (list[0] as Sample).atMs < now - this.#windowMs) list.shift();
    }
    const names = new Set(this.#clusters().map((c) => c.name));
    for (const k of this.#samples.keys()) if (!names.has(k)) this.#samples.delete(k);
    this.#timer = this.#clock.setTimeout(() => this.#sample(), 1000);
  }

  /** Stops the sampler. Idempotent. */
  close(): void {
    this.#closed = true;
    this.#timer?.cancel();
  }
}
