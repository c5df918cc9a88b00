/**
 * The proxy's Prometheus families read from its clusters at scrape time — per endpoint
 * (requests, in flight, errors, connections, ejected, ready, slow-start weight, ejections), per
 * zone (request share) and per cluster (the window's imbalance) — so the hot path pays nothing
 * for them; and the retry counter the clusters' retry policy counts into. `ProxyMetrics` owns
 * the registry and the event-counted families (listeners, latency, reloads).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ClusterStats, EndpointStats } from '../cluster/cluster-stats.js';
import type { Imbalance } from './imbalance.js';
import { proxyMetricNames as n } from './proxy-metric-names.js';

/** The families a caller counts into; the rest read `stats()` when scraped. */
export interface ClusterFamilies {
  readonly ejections: Counter<'cluster' | 'endpoint'>;
  readonly retries: Counter<'cluster' | 'reason'>;
}

/**
 * Registers the cluster-read families on `r`, each reading `stats()` at scrape time.
 *
 * @example
 * const { ejections, retries } = registerClusterFamilies(registry, () => metrics.stats());
 */
export function registerClusterFamilies(r: Registry, stats: () => readonly ClusterStats[]): ClusterFamilies {
  const perEndpoint = (name: string, help: string, type: 'counter' | 'gauge', read: (s: EndpointStats) => number) => {
    const Ctor = type === 'counter' ? Counter : Gauge;
    new Ctor({
      name,
      help,
      labelNames: ['cluster', 'endpoint'],
      registers: [r],
      collect(this: Counter<'cluster' | 'endpoint'> | Gauge<'cluster' | 'endpoint'>) {
        this.reset();
        for (const c of stats()) {
          for (const e of c.endpoints) {
            const labels = { cluster: c.name, endpoint: e.key };
            if (this instanceof Counter) this.inc(labels, read(e));
            else (this as Gauge<'cluster' | 'endpoint'>).set(labels, read(e));
          }
        }
      },
    });
  };
  perEndpoint(n.upstreamRequests, 'Requests sent to each endpoint.', 'counter', (e) => e.requests);
  perEndpoint(n.upstreamInFlight, 'Requests in flight to each endpoint.', 'gauge', (e) => e.inFlight);
  perEndpoint(n.upstreamErrors, 'Failed requests (5xx or transport error) per endpoint.', 'counter', (e) => e.errors);
  perEndpoint(n.upstreamConnections, 'Open upstream connections per endpoint.', 'gauge', (e) => e.openConnections);
  perEndpoint(n.endpointEjected, '1 while outlier detection ejects the endpoint.', 'gauge', (e) =>
    e.state === 'ejected' ? 1 : 0,
  );
  perEndpoint(n.endpointReady, '1 while the endpoint is ready.', 'gauge', (e) => (e.ready ? 1 : 0));
  perEndpoint(
    n.endpointSlowStartWeight,
    'Slow-start multiplier on the endpoint weight (1 = full weight).',
    'gauge',
    (e) => e.slowStartWeight,
  );
  const ejections = new Counter({
    name: n.endpointEjections,
    help: 'Outlier-detection ejections per endpoint.',
    labelNames: ['cluster', 'endpoint'],
    registers: [r],
    collect(this: Counter<'cluster' | 'endpoint'>) {
      // Every known endpoint has a series (0 until its first ejection), so rate() works.
      for (const c of stats()) {
        for (const e of c.endpoints) this.inc({ cluster: c.name, endpoint: e.key }, 0);
      }
    },
  });
  const retries = new Counter({
    name: n.upstreamRetries,
    help: "Upstream attempts retried by the cluster's retry policy, by reason (connect-failure, reused-connection, idempotent).",
    labelNames: ['cluster', 'reason'],
    registers: [r],
  });
  new Gauge({
    name: n.zoneRequestShare,
    help: "Each zone's share of the cluster's requests, sliding window (0..1).",
    labelNames: ['cluster', 'zone'],
    registers: [r],
    collect(this: Gauge<'cluster' | 'zone'>) {
      this.reset();
      for (const c of stats()) for (const z of c.zones) this.set({ cluster: c.name, zone: z.zone }, z.share);
    },
  });
  const perCluster = (name: string, help: string, read: (i: Imbalance) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['cluster'],
      registers: [r],
      collect(this: Gauge<'cluster'>) {
        this.reset();
        for (const c of stats()) this.set({ cluster: c.name }, read(c.window.imbalance));
      },
    });
  perCluster(
    n.imbalanceMaxOverMean,
    'Busiest endpoint over the mean, sliding window (1 = even).',
    (i) => i.maxOverMean,
  );
  perCluster(
    n.imbalanceCov,
    'Coefficient of variation of per-endpoint requests, sliding window (0 = even).',
    (i) => i.cov,
  );
  perCluster(
    n.imbalanceJain,
    "Jain's fairness index of per-endpoint requests, sliding window (1 = even).",
    (i) => i.jain,
  );
  return { ejections, retries };
}
