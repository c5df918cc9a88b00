/**
 * Prometheus instruments of the server-side connection recycler, named in one place. They live
 * on a prom-client `Registry` the caller owns; several recyclers in one process (an HTTP and an
 * HTTPS server, say) may share a registry: instruments already registered under these names are
 * reused, not registered twice. Every instrument carries a `protocol` label (`http1` or `h2`);
 * closes also carry the `reason` (the shared `CloseReason` vocabulary: `requests`, `age`,
 * `idle`, `shutdown`, `peer`, ...).
 */
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CloseReason } from '../pool/lifetime-policy.js';
import { registeredCounter, registeredGauge, registeredHistogram } from './registered-instruments.js';

/** The metric names, all with the `evenlb_server_` prefix. */
export const serverMetricNames = Object.freeze({
  connectionsOpened: 'evenlb_server_connections_opened_total',
  connectionsClosed: 'evenlb_server_connections_closed_total',
  openConnections: 'evenlb_server_open_connections',
  requestsPerConnection: 'evenlb_server_requests_per_connection',
  connectionAgeSeconds: 'evenlb_server_connection_age_seconds',
} as const);

/** Wire protocol of a server connection. */
export type ServerProtocol = 'http1' | 'h2';

const REQUEST_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 100_000];
const AGE_BUCKETS_SECONDS = [0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 21_600];

/**
 * The recycler's instruments on one registry.
 *
 * @example
 * const metrics = new ServerMetrics(new Registry());
 * metrics.opened('http1');
 * metrics.closed('http1', 'requests', 50, 1234);
 */
export class ServerMetrics {
  readonly #opened: Counter<'protocol'>;
  readonly #closed: Counter<'protocol' | 'reason'>;
  readonly #open: Gauge<'protocol'>;
  readonly #requests: Histogram<'protocol'>;
  readonly #age: Histogram<'protocol'>;

  constructor(registry: Registry) {
    const n = serverMetricNames;
    this.#opened = registeredCounter(
      registry,
      n.connectionsOpened,
      'Server connections accepted (HTTP/1 sockets and HTTP/2 sessions).',
      ['protocol'],
    );
    this.#closed = registeredCounter(
      registry,
      n.connectionsClosed,
      'Server connections closed, by reason (requests, age, idle, shutdown, peer, error).',
      ['protocol', 'reason'],
    );
    this.#open = registeredGauge(registry, n.openConnections, 'Server connections currently open.', ['protocol']);
    this.#requests = registeredHistogram(
      registry,
      n.requestsPerConnection,
      'Requests (HTTP/2: streams) served per connection, observed when it closes.',
      ['protocol'],
      REQUEST_BUCKETS,
    );
    this.#age = registeredHistogram(
      registry,
      n.connectionAgeSeconds,
      'Connection lifetime in seconds, observed when it closes.',
      ['protocol'],
      AGE_BUCKETS_SECONDS,
    );
  }

  /** A connection was accepted. */
  opened(protocol: ServerProtocol): void {
    this.#opened.inc({ protocol });
    this.#open.inc({ protocol });
  }

  /** A connection closed after serving `requests` requests over `ageMs` milliseconds. */
  closed(protocol: ServerProtocol, reason: CloseReason, requests: number, ageMs: number): void {
    this.#closed.inc({ protocol, reason });
    this.#open.dec({ protocol });
    this.#requests.observe({ protocol }, requests);
    this.#age.observe({ protocol }, ageMs / 1000);
  }
}
