/**
 * The proxy's Prometheus metric names (`evenlb_proxy_*`), in one place for the families that
 * register them, the dashboards and the tests.
 */
/** Metric names, exported so dashboards and tests use the names the proxy really exports. */
export const proxyMetricNames = Object.freeze({
  upstreamRequests: 'evenlb_proxy_upstream_requests_total',
  upstreamInFlight: 'evenlb_proxy_upstream_requests_in_flight',
  upstreamErrors: 'evenlb_proxy_upstream_errors_total',
  upstreamConnections: 'evenlb_proxy_upstream_connections',
  upstreamDuration: 'evenlb_proxy_upstream_request_duration_seconds',
  endpointEjected: 'evenlb_proxy_endpoint_ejected',
  endpointEjections: 'evenlb_proxy_endpoint_ejections_total',
  upstreamRetries: 'evenlb_proxy_upstream_retries_total',
  endpointReady: 'evenlb_proxy_endpoint_ready',
  imbalanceMaxOverMean: 'evenlb_proxy_imbalance_max_over_mean',
  imbalanceCov: 'evenlb_proxy_imbalance_cov',
  imbalanceJain: 'evenlb_proxy_imbalance_jain',
  endpointSlowStartWeight: 'evenlb_proxy_endpoint_slow_start_weight',
  zoneRequestShare: 'evenlb_proxy_zone_request_share',
  downstreamRequests: 'evenlb_proxy_downstream_requests_total',
  downstreamConnections: 'evenlb_proxy_downstream_connections',
  downstreamConnectionsOpened: 'evenlb_proxy_downstream_connections_opened_total',
  downstreamClosed: 'evenlb_proxy_downstream_closed_total',
  rejected: 'evenlb_proxy_rejected_requests_total',
  loadReports: 'evenlb_proxy_load_reports_total',
  loadProbes: 'evenlb_proxy_load_probes_answered_total',
  configReloads: 'evenlb_proxy_config_reloads_total',
});
