/**
 * Load reports for gRPC servers built with grpc-js, which owns its HTTP/2 server (no
 * `reportLoad` there): a handler counts its call with `reporter.begin()` and ends it with
 * `grpcLoadTrailer`, which adds the report to the call's trailing metadata as the ASCII entry
 * `endpoint-load-metrics` (the TEXT form; the evenlb gRPC policy reads it from the trailers)
 * and counts the call's end. grpc-js sends trailing metadata where a handler hands it over:
 * the unary and client-streaming `callback(error, value, trailer)`, an error's `metadata`, and
 * `call.end(metadata)` of server-streaming and bidirectional calls. A call the client cancels
 * sends no trailers: end its request on `'cancelled'`.
 *
 * Probes reach a gRPC server on a port of its own: `serveLoadDocument` serves the reporter's
 * load document there (plain HTTP/1.1).
 */
import { DEFAULT_LOAD_PATH } from '../../balancing/load-document.js';
import { LOAD_REPORT_HEADER } from '../../balancing/load-report.js';
import { type Input, opt, parseOptions } from '../../core/options.js';
import { isLogger } from '../fair-share/fair-share-options.js';
import { LoadEndpoint } from './load-endpoint.js';
import type { LoadReporter, ReportedRequest } from './load-reporter.js';

/** grpc-js `Metadata`, as far as adding an entry goes. */
export interface WritableMetadata {
  set(key: string, value: string): void;
}

/**
 * Adds `request`'s load report (when sampled) to `metadata` and ends the request (`failed`
 * counts it in `eps`); returns `metadata`.
 *
 * @example
 * const reporter = new LoadReporter({ applicationUtilization: () => busy / workers });
 * server.addService(EchoService, {
 *   echo(call, callback) {
 *     const load = reporter.begin();
 *     call.on('cancelled', () => load.end());
 *     callback(null, { text: call.request.text }, grpcLoadTrailer(load, new grpc.Metadata()));
 *   },
 * });
 */
export function grpcLoadTrailer<M extends WritableMetadata>(request: ReportedRequest, metadata: M, failed = false): M {
  const value = request.reportValue();
  if (value !== undefined) metadata.set(LOAD_REPORT_HEADER, value);
  request.end(failed);
  return metadata;
}

const serveLoadDocumentSpec = {
  /** The port to serve the load document on (plain HTTP/1.1). */
  port: opt.int({ min: 1, max: 65535 }),
  /** Address to bind; default all interfaces. */
  host: opt.string({ nonEmpty: true, optional: true }),
  /** Path of the document; default `/.well-known/evenlb/load`. */
  path: opt.custom<string, { default: string }>(
    'a path starting with "/" (no spaces)',
    (v): v is string => typeof v === 'string' && /^\/\S*$/.test(v),
    { default: DEFAULT_LOAD_PATH },
  ),
  /** Where a port that cannot be bound is reported (pino-compatible `warn`); default none. */
  logger: opt.custom('a logger with warn(fields, message)', isLogger, { optional: true }),
};

/** What `serveLoadDocument` accepts, derived from its spec. */
export interface ServeLoadDocumentOptions extends Readonly<Input<typeof serveLoadDocumentSpec>> {}

/** A load document served on a port of its own. */
export interface ServedLoadDocument {
  /** Resolves true once it listens, false when the port cannot be bound. */
  readonly listening: Promise<boolean>;
  /** Stops serving; idempotent, always settles. */
  close(): Promise<void>;
}

/**
 * Serves `reporter`'s load document (`inFlight`, `latencyMs` for load probes) on its own port —
 * for servers `reportLoad` cannot attach to (grpc-js). Clients probe it with `loadProbes: { port }`.
 *
 * @example
 * const served = serveLoadDocument(reporter, { port: 9091 });
 * // a gRPC channel: evenlbServiceConfig({ policy: 'prequal', loadProbes: { port: 9091 } })
 */
export function serveLoadDocument(reporter: LoadReporter, options: ServeLoadDocumentOptions): ServedLoadDocument {
  const o = parseOptions('serveLoadDocument', options, serveLoadDocumentSpec);
  const endpoint = new LoadEndpoint({ path: o.path, port: o.port, host: o.host }, true, o.logger);
  endpoint.attach({ probe: () => reporter.probeAnswer() });
  return Object.freeze({ listening: endpoint.listening, close: () => endpoint.close() });
}
