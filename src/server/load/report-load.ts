/**
 * `reportLoad`: a `node:http`, `node:https` or `node:http2` server reports its load — on every
 * response (or a sampled share) the ORCA `endpoint-load-metrics` header a `LoadReporter` keeps
 * ready, and to load probes the load document's `inFlight` and `latencyMs` — so balancers using
 * `report-weighted` or `prequal` (BalancedAgent, `createHttpAgent`, the gRPC plugin) weigh this
 * server by what it says of itself rather than by what each of them sees.
 *
 * Requests are seen through the server's connection registry (the one `recycleConnections` and
 * `drain` share), before the application — without tracking connections, which reporting does
 * not need (the registry tracks them only while a recycler or a drain holds it). Each request is
 * counted from its arrival to its response's close (the one `close` listener the registry keeps
 * per response), and its report is set just before its head is written (HTTP/1: the response's
 * `writeHead`, as its headers argument when the application passes none; HTTP/2: the stream's
 * `respond`, which the compatibility API also goes through), so the report says how things
 * stand when the client reads it. Responses with status ≥ 500 count as errors (`eps`).
 *
 * Probes are answered on the server's load document (`load-endpoint.ts`): the fair-share
 * endpoint when its recycler has `fairShare`, else `loadPort` / `loadPath` here (default: the
 * server itself, at `/.well-known/evenlb/load`; HTTP/2 servers need `loadPort`).
 */
import type http from 'node:http';
import type http2 from 'node:http2';
import { DEFAULT_LOAD_PATH, isLoadPath, LOAD_PATH_EXPECTED } from '../../balancing/load-document.js';
import { LOAD_REPORT_HEADER } from '../../balancing/load-report.js';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import { type Input, opt, type Parsed, parseOptions } from '../../core/options.js';
import { ConnectionRegistry } from '../connection-registry.js';
import { isLogger } from '../fair-share/fair-share-options.js';
import type { RequestTap, TappedRequest } from '../request-tap.js';
import { attachLoadDocument } from './load-endpoint.js';
import { LoadReporter } from './load-reporter.js';
import { loadReporterSpec } from './load-reporter-options.js';

const COMPONENT = 'reportLoad';

export const reportLoadSpec = {
  ...loadReporterSpec,
  /** A `LoadReporter` to report through (shared with a gRPC server in the same process); its own options then apply. */
  reporter: opt.custom<LoadReporter, { optional: true }>(
    'a LoadReporter',
    (v): v is LoadReporter => v instanceof LoadReporter,
    { optional: true },
  ),
  /** Answer load probes (the load document's `inFlight`, `latencyMs`); default true. */
  probes: opt.boolean({ default: true }),
  /**
   * Serve the load document on its own port (plain HTTP/1.1, all interfaces); unset: the server
   * itself answers `loadPath` (HTTP/1.x servers only), or its recycler's `fairShare` endpoint.
   */
  loadPort: opt.int({ min: 1, max: 65535, optional: true }),
  /** Address the `loadPort` server binds; default all interfaces. */
  loadHost: opt.string({ nonEmpty: true, optional: true }),
  /** Path of the load document; default `/.well-known/evenlb/load` (or the fair-share endpoint's). */
  loadPath: opt.custom<string, { optional: true }>(LOAD_PATH_EXPECTED, isLoadPath, { optional: true }),
  /** Where warnings go (a load port that cannot be bound; pino-compatible `warn`); default none. */
  logger: opt.custom('a logger with warn(fields, message)', isLogger, { optional: true }),
};

/** What `reportLoad` accepts, derived from `reportLoadSpec` (each field's TSDoc is on its spec entry). */
export interface ReportLoadOptions extends Readonly<Input<typeof reportLoadSpec>> {}

export type ParsedReportLoadOptions = Parsed<typeof reportLoadSpec>;

/** The handle `reportLoad` returns. */
export interface LoadReporting {
  /** The reporter (figures, `stats()`, `probeAnswer()`). */
  readonly reporter: LoadReporter;
  /** Resolves true once an own `loadPort` listens; false when it cannot, or when there is none. */
  readonly listening: Promise<boolean>;
  /**
   * Stops reporting: responses no longer carry reports, probes are no longer answered here, and
   * a reporter made by `reportLoad` stops its timer. Idempotent; always settles.
   */
  close(): Promise<void>;
}

type WriteHead = (this: http.ServerResponse, ...args: unknown[]) => http.ServerResponse;

/**
 * Sets each admitted request's report and counts it. An HTTP/1 response's report goes in as the
 * headers argument of its `writeHead` when the application passes none there (what `res.end()`
 * and `res.write()` do): Node then neither creates the response's header map for it nor
 * validates it twice, which makes the header cost less than half of what `setHeader` costs. When
 * the application passes headers to `writeHead` itself, the report is set with `setHeader`
 * before them.
 */
class ReportingTap implements RequestTap {
  readonly #reporter: LoadReporter;

  constructor(reporter: LoadReporter) {
    this.#reporter = reporter;
  }

  request(_req: http.IncomingMessage, res: http.ServerResponse): TappedRequest {
    const request = this.#reporter.begin();
    const writeHead = res.writeHead as WriteHead;
    res.writeHead = function (this: http.ServerResponse, statusCode: unknown, reason?: unknown, headers?: unknown) {
      res.writeHead = writeHead as typeof res.writeHead;
      const value = res.headersSent ? undefined : request.reportValue();
      if (value !== undefined && headers === undefined) {
        if (reason === undefined) return writeHead.call(this, statusCode, [LOAD_REPORT_HEADER, value]);
        if (typeof reason === 'string') return writeHead.call(this, statusCode, reason, [LOAD_REPORT_HEADER, value]);
      }
      if (value !== undefined) res.setHeader(LOAD_REPORT_HEADER, value);
      // biome-ignore lint/complexity/noArguments: the application's own arguments, as it passed them
      return writeHead.apply(this, arguments as unknown as unknown[]);
    } as typeof res.writeHead;
    return request;
  }

  stream(stream: http2.ServerHttp2Stream): void {
    const request = this.#reporter.begin();
    let status = 200;
    const respond = stream.respond;
    stream.respond = function (
      this: http2.ServerHttp2Stream,
      headers?: http2.OutgoingHttpHeaders,
      options?: http2.ServerStreamResponseOptions,
    ) {
      stream.respond = respond;
      status = Number(headers?.[':status'] ?? 200);
      const value = request.reportValue();
      return respond.call(this, value === undefined ? headers : { ...headers, [LOAD_REPORT_HEADER]: value }, options);
    };
    stream.once('close', () => request.end(status >= 500));
  }
}

/**
 * Makes `server` report its load on responses and answer load probes (see the module comment).
 *
 * @example
 * import http from 'node:http';
 * import { reportLoad } from 'evenlb/server';
 *
 * const server = http.createServer(handler);
 * const reporting = reportLoad(server, { applicationUtilization: () => queue.busy / queue.workers });
 * server.listen(8080);
 * // responses carry: endpoint-load-metrics: TEXT cpu_utilization=0.31, application_utilization=0.5,
 * //   rps_fractional=212, eps=0, named_metrics.inflight=3, named_metrics.latency_ms=12.4
 * // GET /.well-known/evenlb/load → {"protocol":"evenlb-load/1","inFlight":3,"latencyMs":12.4}
 */
export function reportLoad(server: unknown, options: ReportLoadOptions = {}): LoadReporting {
  const o = parseOptions(COMPONENT, options, reportLoadSpec);
  if (o.reporter !== undefined) {
    const own = Object.keys(options).filter((k) => k in loadReporterSpec);
    if (own.length > 0) {
      throw new EvenlbError(
        ErrorCodes.INVALID_OPTION,
        `${COMPONENT}: option "${own[0]}" cannot be set with "reporter" (the reporter's own options apply)`,
        { details: { component: COMPONENT, field: own[0] } },
      );
    }
  }
  const registry = ConnectionRegistry.acquire(server, COMPONENT, false);
  if (registry.tap !== undefined) {
    registry.release(false);
    throw new EvenlbError(
      ErrorCodes.INVALID_OPTION,
      `${COMPONENT}: this server already reports its load; close() that before attaching another`,
      { details: { component: COMPONENT, field: 'server' } },
    );
  }
  const reporter =
    o.reporter ?? new LoadReporter(Object.fromEntries(Object.keys(loadReporterSpec).map((k) => [k, o[k as 'clock']])));
  let detach: (() => Promise<void>) | undefined;
  let listening: Promise<boolean> = Promise.resolve(false);
  if (o.probes) {
    try {
      detach = attachLoadDocument(
        registry,
        { probe: () => reporter.probeAnswer() },
        {
          component: COMPONENT,
          fields: { port: 'loadPort', path: 'loadPath' },
          port: o.loadPort,
          host: o.loadHost,
          path: o.loadPath,
          defaultPath: DEFAULT_LOAD_PATH,
          logger: o.logger,
        },
      );
      listening = registry.loadEndpoint?.listening ?? listening;
    } catch (err) {
      registry.release(false);
      if (o.reporter === undefined) reporter.close();
      throw err;
    }
  }
  const tap = new ReportingTap(reporter);
  registry.tap = tap;
  let closing: Promise<void> | undefined;
  return Object.freeze({
    reporter,
    listening,
    close: () => {
      closing ??= (async () => {
        if (registry.tap === tap) registry.tap = undefined;
        registry.release(false);
        if (o.reporter === undefined) reporter.close();
        await detach?.();
      })();
      return closing;
    },
  });
}
