/** The L7/L4 balancing proxy: configuration, the running server, and its building blocks. */
export type {
  ClusterConfig,
  ListenerConfig,
  ListenerLimits,
  ListenerProtocol,
  ProxyConfig,
  RouteConfig,
} from './config/config-schema.js';
export { proxyConfigSchema } from './config/config-schema.js';
export {
  configFromFlags,
  defaultListenerLimits,
  loadProxyConfigFile,
  normalizeProxyConfig,
  type ProxyFlags,
  parseProxyConfig,
} from './config/proxy-config.js';
export { type ProxyOptions, ProxyServer } from './proxy-server.js';
