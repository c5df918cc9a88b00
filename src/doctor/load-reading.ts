/**
 * Per-pod load as the doctor reads it, whatever the source (pod scrapes through the API
 * server, or Prometheus): requests per second now and in an earlier window (to tell a stable
 * skew from a passing one), and open connections when a gauge for them exists. Also the metric
 * names tried by default, in order — the first one a pod (or Prometheus) has is used.
 */

export interface PodLoad {
  readonly requestsPerSecond: number;
  /** Open connections, when a connections gauge was found. */
  readonly connections: number | undefined;
}

export interface LoadReading {
  /** How the figures were obtained, for the report. */
  readonly source: string;
  /** The request metric used. */
  readonly metric: string;
  /** The connections metric used, if any. */
  readonly connectionsMetric: string | undefined;
  readonly pods: ReadonlyMap<string, PodLoad>;
  /** Requests per second per pod in the earlier window (same metric). */
  readonly earlier: ReadonlyMap<string, number> | undefined;
  /** Length of one measured window, ms. */
  readonly windowMs: number;
  /**
   * Whether the pods expose evenlb's server-side metrics (`evenlb_server_*`: the recycler of
   * `evenlb/server`, or the fair-share sidecar's shedding); false: none of them does, so a
   * server-side cure comes as the sidecar. Undefined when it could not be told.
   */
  readonly evenlbServer?: boolean | undefined;
}

/** The prefix of evenlb's server-side metrics (the recycler's and fair-share shedding's). */
export const EVENLB_SERVER_METRIC_PREFIX = 'evenlb_server_';

/**
 * Request counters tried by default: evenlb's own proxy, the common HTTP server libraries
 * (prom-client examples, Micrometer/Spring, OpenTelemetry semantic conventions), gRPC.
 */
export const DEFAULT_REQUEST_COUNTERS: readonly string[] = [
  'evenlb_proxy_downstream_requests_total',
  'http_requests_total',
  'http_server_requests_total',
  'http_server_requests_seconds_count',
  'http_server_request_duration_seconds_count',
  'http_server_duration_milliseconds_count',
  'grpc_server_handled_total',
];

/** Open-connection gauges tried by default: evenlb's recycler and proxy, then common names. */
export const DEFAULT_CONNECTION_GAUGES: readonly string[] = [
  'evenlb_server_open_connections',
  'evenlb_proxy_downstream_connections',
  'http_server_active_connections',
  'http_server_open_connections',
];
