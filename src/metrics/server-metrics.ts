/**
 * Prometheus instruments of the server-side connection recycler, named in one place. They live
 * on a prom-client `Registry` the caller owns; several recyclers in one process (an HTTP and an
 * HTTPS server, say) may share a registry: instruments already registered under these names are
 * reused, not registered twice. Every instrument carries a `protocol` label (`http1` or `h2`);
 * closes also carry the `reason` (the shared `CloseReason` vocabulary: `requests`, `age`,
 * `idle`, `shutdown`, `peer`, ...).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import type { CloseReason } from '../pool/lifetime-policy.js';

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
    this.#opened = reuse(registry, n.connectionsOpened, Counter, (registers) => {
      return new Counter({
        name: n.connectionsOpened,
        help: 'Server connections accepted (HTTP/1 sockets and HTTP/2 sessions).',
        labelNames: ['protocol'],
        registers,
      });
    });
    this.#closed = reuse(registry, n.connectionsClosed, Counter, (registers) => {
      return new Counter({
        name: n.connectionsClosed,
        help: 'Server connections closed, by reason (requests, age, idle, shutdown, peer, error).',
        labelNames: ['protocol', 'reason'],
        registers,
      });
    });
    this.#open = reuse(registry, n.openConnections, Gauge, (registers) => {
      return new Gauge({
        name: n.openConnections,
        help: 'Server connections currently open.',
        labelNames: ['protocol'],
        registers,
      });
    });
    this.#requests = reuse(registry, n.requestsPerConnection, Histogram, (registers) => {
      return new Histogram({
        name: n.requestsPerConnection,
        help: 'Requests (HTTP/2: streams) served per connection, observed when it closes.',
        labelNames: ['protocol'],
        buckets: REQUEST_BUCKETS,
        registers,
      });
    });
    this.#age = reuse(registry, n.connectionAgeSeconds, Histogram, (registers) => {
      return new Histogram({
        name: n.connectionAgeSeconds,
        help: 'Connection lifetime in seconds, observed when it closes.',
        labelNames: ['protocol'],
        buckets: AGE_BUCKETS_SECONDS,
        registers,
      });
    });
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

/** Returns the instrument registered under `name`, creating it when absent. */
function reuse<M>(
  registry: Registry,
  name: string,
  kind: abstract new (...args: never[]) => M,
  create: (registers: Registry[]) => M,
): M {
  const existing = registry.getSingleMetric(name);
  if (existing === undefined) return create([registry]);
  if (existing instanceof kind) return existing;
  throw new EvenlbError(
    ErrorCodes.INVALID_OPTION,
    `metrics registry: "${name}" is already registered as another kind of instrument`,
    { details: { metric: name } },
  );
}
