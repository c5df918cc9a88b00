/** Clusters: per-Service request machinery shared by the BalancedAgent and the proxy. */
export * from './cluster.js';
export * from './cluster-options.js';
export * from './cluster-stats.js';
