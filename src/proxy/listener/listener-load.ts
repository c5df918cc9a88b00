/**
 * An L7 listener's load reporting (`listeners[].loadReport`): one `LoadReporter` counting every
 * request the listener forwards, from its routed head to the end of its response to the client
 * (or its failure or abort — `end()` runs on every way out, so requests in flight return to 0),
 * on every client protocol: the raw HTTP/1.1 data path (`ReportedRequestRecord`,
 * `ReportingRawSink`, chosen once per connection), node:http (`response`) and HTTP/2 streams
 * (`stream`), each called once per routed request. Errors are responses with status ≥ 500, and
 * gRPC calls ending with a failure `grpc-status` (`grpcOutcome`'s default set), read from the
 * head or the trailers the listener sends anyway.
 *
 * The response head to the client carries the `endpoint-load-metrics` report (sampled by
 * `sampleRate`) unless the upstream's response already has one: the app's own report wins and
 * is passed through unchanged. Probes read the load document on the listener's load port —
 * its own (`loadPort`, made here) or, with `recycle.fairShare`, the fair-share load port, whose
 * document gains the probe figures (`ListenerRecycling` serves it; `probe()` is what it adds).
 *
 * Each report added, each app's report passed through and each read of the load document is
 * counted in the listener's `LoadReportCounts` (bound once, plain numbers: nothing per request
 * but an increment), which `ProxyMetrics` exposes as `evenlb_proxy_load_reports_total` and
 * `evenlb_proxy_load_probes_answered_total`.
 *
 * `cpu_utilization` comes from `podCpuMeter` (the cgroup's or host's CPU, not this process's);
 * `application_utilization`, when `maxInFlight` is set, is the period's mean requests in flight
 * (completions a second × latency estimate, or those in flight now if more) over it.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { ServerHttp2Stream, ServerStreamResponseOptions } from 'node:http2';
import type { Logger } from 'pino';
import { DEFAULT_LOAD_PATH, type ProbeAnswer } from '../../balancing/load-document.js';
import { LOAD_REPORT_HEADER } from '../../balancing/load-report.js';
import { grpcOutcome, grpcStatusOf } from '../../cluster/grpc-outcome.js';
import type { Clock } from '../../core/clock.js';
import { parseOptions } from '../../core/options.js';
import type { LoadReportCounts } from '../../metrics/proxy-metrics.js';
import { LoadEndpoint } from '../../server/load/load-endpoint.js';
import { LoadReporter, type ReportedRequest } from '../../server/load/load-reporter.js';
import type { ListenerConfig } from '../config/config-schema.js';
import { listenerLoadReportSpec } from '../config/listener-load-report.js';
import { type CpuMeter, podCpuMeter } from './pod-cpu.js';

export interface ListenerLoadDeps {
  readonly clock: Clock;
  readonly logger: Logger;
  /** Where its reports and probes are counted (`ProxyMetrics.loadReportCounts`, bound once per listener). */
  readonly counts: LoadReportCounts;
  /** The CPU meter; default `podCpuMeter()` (tests pass their own). */
  readonly cpu?: CpuMeter;
}

/** True for a `grpc-status` value that counts as the endpoint's failure. */
function grpcFailed(value: unknown): boolean {
  if (value === undefined) return false;
  const outcome = grpcOutcome(grpcStatusOf(value));
  return outcome === 'http-error' || outcome === 'transport-error';
}

/** True when the flat header list `list` has an `endpoint-load-metrics` field. */
export function hasLoadReport(list: readonly string[]): boolean {
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i] as string;
    if (name.length === LOAD_REPORT_HEADER.length && name.toLowerCase() === LOAD_REPORT_HEADER) return true;
  }
  return false;
}

/**
 * `headers` (any form `writeHead` takes) with `request`'s report, unless they carry one already
 * or it is not sampled; counts what it did in `counts`.
 */
function withReport(
  headers: OutgoingHttpHeaders | readonly string[] | undefined,
  request: ReportedRequest,
  res: ServerResponse,
  counts: LoadReportCounts,
): OutgoingHttpHeaders | readonly string[] | undefined {
  if (Array.isArray(headers)) {
    if (hasLoadReport(headers)) {
      counts.passed++;
      return headers;
    }
    const value = request.reportValue();
    if (value === undefined) return headers;
    counts.attached++;
    return [...headers, LOAD_REPORT_HEADER, value];
  }
  const object = headers as OutgoingHttpHeaders | undefined;
  if (
    (object !== undefined && Object.keys(object).some((k) => k.toLowerCase() === LOAD_REPORT_HEADER)) ||
    res.hasHeader(LOAD_REPORT_HEADER)
  ) {
    counts.passed++;
    return object;
  }
  const value = request.reportValue();
  if (value === undefined) return object;
  counts.attached++;
  return { ...object, [LOAD_REPORT_HEADER]: value };
}

/**
 * The port `l` serves its load document on: fair share's load port, else the load report's;
 * undefined when it serves none.
 *
 * @example
 * listenerLoadPort({ ...listener, loadReport: { loadPort: 9904 } }); // 9904
 */
export function listenerLoadPort(l: ListenerConfig): number | undefined {
  return l.recycle?.fairShare?.loadPort ?? l.loadReport?.loadPort;
}

type WriteHead = (this: ServerResponse, ...args: unknown[]) => ServerResponse;

export class ListenerLoad {
  readonly reporter: LoadReporter;
  /** Its reports and probes, counted (`ProxyMetrics.loadReportCounts`). */
  readonly counts: LoadReportCounts;
  /** The load document on `loadReport.loadPort` (none with fair share: its port serves it). */
  readonly #endpoint: LoadEndpoint | undefined;
  #closed = false;

  constructor(config: ListenerConfig, deps: ListenerLoadDeps) {
    this.counts = deps.counts;
    const o = parseOptions(`listeners.${config.name}.loadReport`, config.loadReport ?? {}, listenerLoadReportSpec);
    const meter = o.cpu ? (deps.cpu ?? podCpuMeter()) : undefined;
    const maxInFlight = o.maxInFlight;
    // The reporter reads its first figures while it is built: nothing is in flight then.
    let inFlight = (): number => 0;
    this.reporter = new LoadReporter({
      periodMs: o.periodMs,
      windowMs: o.windowMs,
      sampleRate: o.sampleRate,
      cpu: o.cpu,
      latencyMaxAgeMs: o.latencyMaxAgeMs,
      clock: deps.clock,
      ...(meter === undefined
        ? {}
        : { cpuCores: o.cpuCores ?? meter.cores, cpuUsageMicros: () => meter.usageMicros() }),
      ...(maxInFlight === undefined ? {} : { applicationUtilization: () => inFlight() / maxInFlight }),
    });
    const reporter = this.reporter;
    // Requests in flight over the period (Little's law: completions a second × the latency
    // estimate), or now if more: a snapshot alone would read 0 between a fast app's requests.
    // Before the first completion the estimate is unknown: the snapshot alone.
    inFlight = () =>
      Math.max(
        reporter.inFlight,
        ((reporter.report().rpsFractional ?? 0) * (reporter.probeAnswer().latencyMs ?? 0)) / 1000,
      );
    if (config.recycle?.fairShare === undefined && o.loadPort !== undefined) {
      this.#endpoint = new LoadEndpoint(
        { path: DEFAULT_LOAD_PATH, port: o.loadPort, host: o.loadHost },
        true,
        deps.logger,
      );
      this.#endpoint.attach({ probe: () => this.probe() });
    }
  }

  /** What a load probe learns now (each call is one read of the load document, counted). */
  probe(): ProbeAnswer {
    this.counts.probes++;
    return this.reporter.probeAnswer();
  }

  /** Resolves true once the own load port listens; false when it cannot, or there is none. */
  get listening(): Promise<boolean> {
    return this.#endpoint?.listening ?? Promise.resolve(false);
  }

  /**
   * Counts a routed node:http request until `res` closes, and reports on its head (see the
   * module comment).
   */
  response(res: ServerResponse): void {
    const request = this.reporter.begin();
    const counts = this.counts;
    const writeHead = res.writeHead as WriteHead;
    res.writeHead = function (this: ServerResponse, statusCode: unknown, reason?: unknown, headers?: unknown) {
      res.writeHead = writeHead as typeof res.writeHead;
      if (typeof reason === 'string') {
        return writeHead.call(
          this,
          statusCode,
          reason,
          withReport(headers as OutgoingHttpHeaders, request, res, counts),
        );
      }
      return writeHead.call(this, statusCode, withReport(reason as OutgoingHttpHeaders, request, res, counts));
    } as typeof res.writeHead;
    res.once('close', () => request.end(res.statusCode >= 500));
  }

  /** Counts a routed HTTP/2 stream until it closes, and reports on its response headers. */
  stream(stream: ServerHttp2Stream, grpc: boolean): void {
    const request = this.reporter.begin();
    const counts = this.counts;
    let failed = false;
    const respond = stream.respond;
    stream.respond = function (
      this: ServerHttp2Stream,
      headers?: OutgoingHttpHeaders,
      options?: ServerStreamResponseOptions,
    ) {
      stream.respond = respond;
      failed = Number(headers?.[':status'] ?? 200) >= 500 || (grpc && grpcFailed(headers?.['grpc-status']));
      let value: string | undefined;
      if (headers?.[LOAD_REPORT_HEADER] !== undefined) counts.passed++;
      else {
        value = request.reportValue();
        if (value !== undefined) counts.attached++;
      }
      return respond.call(this, value === undefined ? headers : { ...headers, [LOAD_REPORT_HEADER]: value }, options);
    };
    if (grpc) {
      const sendTrailers = stream.sendTrailers;
      stream.sendTrailers = function (this: ServerHttp2Stream, trailers: IncomingHttpHeaders) {
        stream.sendTrailers = sendTrailers;
        if (grpcFailed(trailers['grpc-status'])) failed = true;
        return sendTrailers.call(this, trailers);
      };
    }
    stream.once('close', () => request.end(failed));
  }

  /** Stops answering probes on the own load port (a replacement is about to bind it); idempotent. */
  stopServing(): Promise<void> {
    return this.#endpoint?.close() ?? Promise.resolve();
  }

  /** Stops the reporter's timer and the own load port; responses still in flight end normally. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.reporter.close();
    await this.stopServing();
  }
}
