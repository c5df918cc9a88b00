/**
 * evenlb — even load across Kubernetes pods, whatever the connections do.
 *
 * The public API: the core vocabulary (endpoints, endpoint sets, target URIs, feature gates,
 * clock and random), the balancing engine, connection lifetime policy, and (as they land)
 * the BalancedAgent client, endpoint sources and the proxy.
 */
export * from './balancing/index.js';
export * from './balancing/outlier-detector.js';
export * from './client/index.js';
export * from './cluster/index.js';
export * from './core/index.js';
export * from './discovery/create-endpoint-source.js';
export * from './discovery/dns-endpoint-source.js';
export * from './discovery/file-endpoint-source.js';
export * from './discovery/index.js';
export * from './metrics/client-metrics.js';
export * from './metrics/imbalance.js';
export { proxyMetricNames } from './metrics/proxy-metrics.js';
export * from './pool/endpoint-pool.js';
export * from './pool/h2-session-pool.js';
export * from './pool/lifetime-policy.js';
export * from './proxy/index.js';
export { version } from './version.js';
