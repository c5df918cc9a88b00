/**
 * `evenlb/proxy`: the L7/L4 balancing proxy as a library — start a `ProxyServer` from a
 * configuration (parsed from YAML text or a file with the same rules as `evenlb proxy --config`),
 * reload it, read its ports, stats and Prometheus registry, close it. The proxy loads its config
 * validator (ajv, yaml), logger (pino) and metrics (prom-client), which is why it lives behind
 * its own entry point and not in the package root. See docs/proxy.md.
 *
 * @example
 * import { loadProxyConfigFile, ProxyServer } from 'evenlb/proxy';
 * const proxy = await ProxyServer.start(loadProxyConfigFile('/etc/evenlb/proxy.yaml'));
 * proxy.listenerPort('web'); // the bound port
 * await proxy.close();
 */
export {
  type ClusterView,
  type LoadReportCounts,
  type ProxyClusterStats,
  type ProxyEndpointStats,
  type ProxyMetrics,
  type ProxyMetricsOptions,
  proxyMetricNames,
} from '../metrics/proxy-metrics.js';
export type { SameNameClusterConfig } from './config/cluster-config-fields.js';
export type {
  AdminConfig,
  ClusterConfig,
  ClusterTlsConfig,
  ListenerConfig,
  ListenerFairShare,
  ListenerLimits,
  ListenerProtocol,
  ListenerRecycle,
  ListenerTlsConfig,
  ProxyConfig,
  RouteConfig,
} from './config/config-schema.js';
export type { ListenerLoadReport } from './config/listener-load-report.js';
export { loadProxyConfigFile, parseProxyConfig } from './config/proxy-config.js';
export { type ProxyOptions, ProxyServer } from './proxy-server.js';
