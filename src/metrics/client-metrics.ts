/**
 * The BalancedAgent's Prometheus instruments (`evenlb_client_*`), all named here, registered
 * on the caller's prom-client registry. Counters and the latency histogram are fed as
 * requests end and connections come and go (label children are cached, so the hot path is a
 * map lookup and an increment); in-flight, open connections, endpoint state and the imbalance
 * gauges are read from `agent.stats()` at scrape time. Several agents may share a registry:
 * the instruments are registered once and labelled by agent name (`client`).
 */
import type { Counter, Histogram, Registry } from 'prom-client';
import type { ClusterObserver, LoadProbeResult, RequestOutcome } from '../cluster/cluster-options.js';
import type { ClusterStats, EndpointStats } from '../cluster/cluster-stats.js';
import type { RetryReason } from '../cluster/retry-policy.js';
import type { CloseReason } from '../pool/lifetime-policy.js';
import { registeredCounter, registeredGauge, registeredHistogram } from './registered-instruments.js';

/** A prom-client registry (the caller's). */
export type MetricsRegistry = Registry;

/** Metric names, exported so dashboards and tests use the names the client really exports. */
export const clientMetricNames = Object.freeze({
  requests: 'evenlb_client_requests_total',
  requestDuration: 'evenlb_client_request_duration_seconds',
  retries: 'evenlb_client_retries_total',
  connectionsOpened: 'evenlb_client_connections_opened_total',
  connectionsClosed: 'evenlb_client_connections_closed_total',
  ejections: 'evenlb_client_ejections_total',
  inFlight: 'evenlb_client_requests_in_flight',
  openConnections: 'evenlb_client_open_connections',
  endpointEligible: 'evenlb_client_endpoint_eligible',
  windowRequests: 'evenlb_client_window_requests',
  imbalanceMaxOverMean: 'evenlb_client_imbalance_max_over_mean',
  imbalanceCov: 'evenlb_client_imbalance_cov',
  imbalanceJain: 'evenlb_client_imbalance_jain',
  endpointSlowStartWeight: 'evenlb_client_endpoint_slow_start_weight',
  zoneRequestShare: 'evenlb_client_zone_request_share',
  pushbacks: 'evenlb_client_pushbacks_total',
  loadReports: 'evenlb_client_load_reports_total',
  loadProbes: 'evenlb_client_load_probes_total',
});

/** Something whose stats the scrape-time gauges read (a BalancedAgent). */
export interface StatsProvider {
  readonly name: string;
  stats(): { readonly routes: readonly ClusterStats[] };
}

const registries = new WeakMap<Registry, ClientMetrics>();

export class ClientMetrics {
  readonly #providers = new Set<StatsProvider>();
  readonly #requests: Counter<'client' | 'route' | 'endpoint' | 'outcome'>;
  readonly #duration: Histogram<'client' | 'route' | 'endpoint'>;
  readonly #retries: Counter<'client' | 'route' | 'reason'>;
  readonly #opened: Counter<'client' | 'route' | 'endpoint'>;
  readonly #closed: Counter<'client' | 'route' | 'endpoint' | 'reason'>;
  readonly #ejections: Counter<'client' | 'route' | 'endpoint'>;
  readonly #pushbacks: Counter<'client' | 'route' | 'endpoint'>;
  readonly #loadReports: Counter<'client' | 'route' | 'endpoint' | 'result'>;
  readonly #loadProbes: Counter<'client' | 'route' | 'endpoint' | 'result'>;
  /** Cached label children: the request path does one Map lookup per instrument. */
  readonly #counters = new Map<string, { inc(n?: number): void }>();
  readonly #histograms = new Map<string, { observe(v: number): void }>();

  private constructor(registry: Registry) {
    const providers = this.#providers;
    const collectStats = () => [...providers].map((p) => ({ client: p.name, stats: p.stats() }));
    this.#requests = registeredCounter(
      registry,
      clientMetricNames.requests,
      'Requests that ended, by endpoint and outcome (success, http-error, connect-failure, transport-error, aborted).',
      ['client', 'route', 'endpoint', 'outcome'],
    );
    this.#duration = registeredHistogram(
      registry,
      clientMetricNames.requestDuration,
      'Time from pick to the end of the response, per endpoint, in seconds.',
      ['client', 'route', 'endpoint'],
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    );
    this.#retries = registeredCounter(
      registry,
      clientMetricNames.retries,
      'Extra attempts, by reason (connect-failure, reused-connection, idempotent).',
      ['client', 'route', 'reason'],
    );
    this.#opened = registeredCounter(
      registry,
      clientMetricNames.connectionsOpened,
      'Connections opened, per endpoint.',
      ['client', 'route', 'endpoint'],
    );
    this.#closed = registeredCounter(
      registry,
      clientMetricNames.connectionsClosed,
      'Connections closed, per endpoint and reason (requests, age, idle, endpoint-removed, error, peer, shutdown).',
      ['client', 'route', 'endpoint', 'reason'],
    );
    this.#ejections = registeredCounter(
      registry,
      clientMetricNames.ejections,
      'Outlier-detection ejections, per endpoint.',
      ['client', 'route', 'endpoint'],
    );
    this.#pushbacks = registeredCounter(
      registry,
      clientMetricNames.pushbacks,
      'Pushback answers (429, 503, gRPC RESOURCE_EXHAUSTED), per endpoint.',
      ['client', 'route', 'endpoint'],
    );
    this.#loadReports = registeredCounter(
      registry,
      clientMetricNames.loadReports,
      'Load reports on responses (endpoint-load-metrics), by result (recorded, ignored as malformed); only for policies that read them.',
      ['client', 'route', 'endpoint', 'result'],
    );
    this.#loadProbes = registeredCounter(
      registry,
      clientMetricNames.loadProbes,
      'Load probes, by result (sent; then answered or failed; skipped: queue full, already asking, or the endpoint left).',
      ['client', 'route', 'endpoint', 'result'],
    );
    /** A per-endpoint gauge read from every agent's stats at scrape time. */
    const endpointGauge = (name: string, help: string, value: (e: EndpointStats) => number) =>
      registeredGauge(registry, name, help, ['client', 'route', 'endpoint'], (g) => {
        for (const { client, stats } of collectStats())
          for (const r of stats.routes)
            for (const e of r.endpoints) g.set({ client, route: r.name, endpoint: e.key }, value(e));
      });
    endpointGauge(clientMetricNames.inFlight, 'Requests in flight, per endpoint.', (e) => e.inFlight);
    endpointGauge(clientMetricNames.openConnections, 'Open connections, per endpoint.', (e) => e.openConnections);
    registeredGauge(
      registry,
      clientMetricNames.endpointEligible,
      '1 when the endpoint receives new requests, 0 when ejected, draining or not ready.',
      ['client', 'route', 'endpoint', 'state'],
      (g) => {
        for (const { client, stats } of collectStats())
          for (const r of stats.routes)
            for (const e of r.endpoints)
              g.set({ client, route: r.name, endpoint: e.key, state: e.state }, e.state === 'eligible' ? 1 : 0);
      },
    );
    endpointGauge(
      clientMetricNames.windowRequests,
      'Requests per endpoint within the stats window.',
      (e) => e.windowRequests,
    );
    endpointGauge(
      clientMetricNames.endpointSlowStartWeight,
      'Slow-start multiplier on the endpoint weight (1 = full weight).',
      (e) => e.slowStartWeight,
    );
    registeredGauge(
      registry,
      clientMetricNames.zoneRequestShare,
      "Each zone's share of the route's requests within the stats window (0..1).",
      ['client', 'route', 'zone'],
      (g) => {
        for (const { client, stats } of collectStats())
          for (const r of stats.routes)
            for (const z of r.zones) g.set({ client, route: r.name, zone: z.zone }, z.share);
      },
    );
    const imbalanceGauge = (name: string, help: string, pick: (s: ClusterStats) => number) =>
      registeredGauge(registry, name, help, ['client', 'route'], (g) => {
        for (const { client, stats } of collectStats())
          for (const r of stats.routes) g.set({ client, route: r.name }, pick(r));
      });
    imbalanceGauge(
      clientMetricNames.imbalanceMaxOverMean,
      'Busiest endpoint over the mean, requests within the stats window (1 = even).',
      (s) => s.window.imbalance.maxOverMean,
    );
    imbalanceGauge(
      clientMetricNames.imbalanceCov,
      'Coefficient of variation of per-endpoint requests within the stats window (0 = even).',
      (s) => s.window.imbalance.cov,
    );
    imbalanceGauge(
      clientMetricNames.imbalanceJain,
      "Jain's fairness index of per-endpoint requests within the stats window (1 = even).",
      (s) => s.window.imbalance.jain,
    );
  }

  /** The metrics of `registry` (created once per registry), with `provider` added to its scrape. */
  static attach(registry: Registry, provider: StatsProvider): ClientMetrics {
    let m = registries.get(registry);
    if (m === undefined) {
      m = new ClientMetrics(registry);
      registries.set(registry, m);
    }
    m.#providers.add(provider);
    return m;
  }

  /** Stops reading `provider` at scrape time. */
  detach(provider: StatsProvider): void {
    this.#providers.delete(provider);
  }

  /** A cluster observer that feeds these metrics (and then `next`, if given). */
  observer(client: string, next?: ClusterObserver): ClusterObserver {
    const counters = this.#counters;
    const histograms = this.#histograms;
    const requests = this.#requests;
    const duration = this.#duration;
    return {
      requestEnded: (route: string, endpoint: string, outcome: RequestOutcome, durationMs: number) => {
        const key = `${client}\0${route}\0${endpoint}\0${outcome}`;
        let c = counters.get(key);
        if (c === undefined) {
          c = requests.labels(client, route, endpoint, outcome);
          counters.set(key, c);
        }
        c.inc();
        const hkey = `${client}\0${route}\0${endpoint}`;
        let h = histograms.get(hkey);
        if (h === undefined) {
          h = duration.labels(client, route, endpoint);
          histograms.set(hkey, h);
        }
        h.observe(durationMs / 1000);
        next?.requestEnded?.(route, endpoint, outcome, durationMs);
      },
      retried: (route: string, reason: RetryReason) => {
        this.#retries.labels(client, route, reason).inc();
        next?.retried?.(route, reason);
      },
      connectionOpened: (route: string, endpoint: string) => {
        this.#opened.labels(client, route, endpoint).inc();
        next?.connectionOpened?.(route, endpoint);
      },
      connectionClosed: (route: string, endpoint: string, reason: CloseReason) => {
        this.#closed.labels(client, route, endpoint, reason).inc();
        next?.connectionClosed?.(route, endpoint, reason);
      },
      ejected: (route: string, endpoint: string, durationMs: number) => {
        this.#ejections.labels(client, route, endpoint).inc();
        next?.ejected?.(route, endpoint, durationMs);
      },
      pushback: (route: string, endpoint: string) => {
        this.#pushbacks.labels(client, route, endpoint).inc();
        next?.pushback?.(route, endpoint);
      },
      loadReport: (route: string, endpoint: string, recorded: boolean) => {
        const result = recorded ? 'recorded' : 'ignored';
        const key = `${client}\0${route}\0${endpoint}\0report:${result}`;
        let c = counters.get(key);
        if (c === undefined) {
          c = this.#loadReports.labels(client, route, endpoint, result);
          counters.set(key, c);
        }
        c.inc();
        next?.loadReport?.(route, endpoint, recorded);
      },
      loadProbe: (route: string, endpoint: string, result: LoadProbeResult) => {
        this.#loadProbes.labels(client, route, endpoint, result).inc();
        next?.loadProbe?.(route, endpoint, result);
      },
    };
  }
}
