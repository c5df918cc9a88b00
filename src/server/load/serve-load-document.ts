/**
 * A load document on a port of its own (plain HTTP/1.1), for servers `reportLoad` cannot attach
 * to — grpc-js servers, which own their HTTP/2 server: load probes (`prequal`) ask it for the
 * reporter's requests in flight and latency estimate. The reports on a gRPC server's calls come
 * from `grpcLoadInterceptor` in `evenlb/grpc`, with the same `LoadReporter`.
 */
import { DEFAULT_LOAD_PATH, isLoadPath, LOAD_PATH_EXPECTED } from '../../balancing/load-document.js';
import { type Input, opt, parseOptions } from '../../core/options.js';
import { isLogger } from '../fair-share/fair-share-options.js';
import { LoadEndpoint } from './load-endpoint.js';
import type { LoadReporter } from './load-reporter.js';

const serveLoadDocumentSpec = {
  /** The port to serve the load document on (plain HTTP/1.1). */
  port: opt.int({ min: 1, max: 65535 }),
  /** Address to bind; default all interfaces. */
  host: opt.string({ nonEmpty: true, optional: true }),
  /** Path of the document; default `/.well-known/evenlb/load`. */
  path: opt.custom<string, { default: string }>(LOAD_PATH_EXPECTED, isLoadPath, { default: DEFAULT_LOAD_PATH }),
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
