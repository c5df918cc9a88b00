/**
 * `evenlb/server`: the server-side connection recycler, graceful drain and load reporting for
 * `node:http`, `node:https` and `node:http2` servers (and the frameworks built on them), and
 * the load document for grpc-js servers (their per-call reports: `grpcLoadInterceptor` in
 * `evenlb/grpc`).
 *
 * @example
 * import { drainOnSignal, recycleConnections, reportLoad } from 'evenlb/server';
 * recycleConnections(server, { maxRequestsPerConnection: 1000, maxConnectionAgeMs: 300_000 });
 * reportLoad(server); // endpoint-load-metrics on responses; answers load probes
 * drainOnSignal(server, { graceMs: 20_000 });
 */

export type { ProbeAnswer } from '../balancing/load-document.js';
export { fairShareMetricNames } from '../metrics/fair-share-metrics.js';
export { serverMetricNames } from '../metrics/server-metrics.js';
export type { CloseReason } from '../pool/lifetime-policy.js';
export type { ConnectionStats, DrainResult } from './connection-registry.js';
export { type DrainOnSignalOptions, type DrainOptions, drain, drainOnSignal, type SignalDrain } from './drain.js';
export { DEFAULT_LOAD_PATH, type FairShareLogger, type FairShareOptions } from './fair-share/fair-share-options.js';
export type { FairShareStats } from './fair-share/fair-share-shedder.js';
export { LOAD_PROTOCOL, type PeerLoadReport } from './fair-share/load-exchange.js';
export { LoadReporter, type LoadReporterStats, type ReportedRequest } from './load/load-reporter.js';
export type { LoadReporterOptions } from './load/load-reporter-options.js';
export { type LoadReporting, type ReportLoadOptions, reportLoad } from './load/report-load.js';
export {
  type ServedLoadDocument,
  type ServeLoadDocumentOptions,
  serveLoadDocument,
} from './load/serve-load-document.js';
export { type ConnectionRecycler, recycleConnections } from './recycle-connections.js';
export type { RecyclerOptions } from './recycler-options.js';
export type { RecyclableServer } from './server-kind.js';
