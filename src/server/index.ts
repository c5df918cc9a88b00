/**
 * `evenlb/server`: the server-side connection recycler and graceful drain for `node:http`,
 * `node:https` and `node:http2` servers (and the frameworks built on them).
 *
 * @example
 * import { drainOnSignal, recycleConnections } from 'evenlb/server';
 * recycleConnections(server, { maxRequestsPerConnection: 1000, maxConnectionAgeMs: 300_000 });
 * drainOnSignal(server, { graceMs: 20_000 });
 */

export { fairShareMetricNames } from '../metrics/fair-share-metrics.js';
export { serverMetricNames } from '../metrics/server-metrics.js';
export type { CloseReason } from '../pool/lifetime-policy.js';
export type { ConnectionStats, DrainResult } from './connection-registry.js';
export { type DrainOnSignalOptions, type DrainOptions, drain, drainOnSignal, type SignalDrain } from './drain.js';
export { DEFAULT_LOAD_PATH, type FairShareLogger, type FairShareOptions } from './fair-share/fair-share-options.js';
export type { FairShareStats } from './fair-share/fair-share-shedder.js';
export { LOAD_PROTOCOL, type PeerLoadReport } from './fair-share/load-exchange.js';
export { type ConnectionRecycler, recycleConnections } from './recycle-connections.js';
export type { RecyclerOptions } from './recycler-options.js';
export type { RecyclableServer } from './server-kind.js';
