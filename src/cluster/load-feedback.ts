/**
 * What a response says about its endpoint's load, beside how the attempt ended: its HTTP status,
 * its gRPC status and the load report it carried (`endpoint-load-metrics`). A transport hands
 * this to the cluster with the attempt's end (`Attempt.end(outcome, response)`); the cluster
 * applies it to the endpoint's load record in one place (`applyResponse`), exactly once per
 * attempt:
 *
 * - pushback — HTTP 429 or 503, or gRPC RESOURCE_EXHAUSTED — for every policy
 *   (`EndpointLoad.pushback()`: the Balancer's pushback penalty);
 * - the load report, parsed only when the cluster's policy reads reports
 *   (`BalancingPolicy.loadSignals` lists `reports`); a malformed or oversized one is ignored,
 *   never an error (see `load-report.ts`).
 *
 * Transports take the report header's value only when the cluster reads reports
 * (`ClusterInternals.readsReports`), so a cluster whose policy does not read them pays nothing
 * per response; `httpAttemptResponse` and `grpcAttemptResponse` do that for them.
 */
import type { EndpointLoad } from '../balancing/endpoint-load.js';
import { LOAD_REPORT_HEADER, type LoadReport, parseLoadReport } from '../balancing/load-report.js';
import { grpcStatusOf } from './grpc-outcome.js';

/** What a response said, as a transport hands it to `Attempt.end`. Every field is optional. */
export interface AttemptResponse {
  /** The HTTP status of the response (0 or absent: none). */
  readonly status?: number;
  /** The gRPC status the call ended with. */
  readonly grpcStatus?: number;
  /** The `endpoint-load-metrics` value it carried (or a report already read). */
  readonly loadReport?: string | LoadReport | undefined;
}

/** HTTP statuses that are pushback: Too Many Requests, Service Unavailable. */
export const PUSHBACK_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/** gRPC RESOURCE_EXHAUSTED: pushback. */
export const GRPC_RESOURCE_EXHAUSTED = 8;

/** What `applyResponse` did with a response. */
export interface AppliedFeedback {
  /** The endpoint pushed back. */
  readonly pushback: boolean;
  /** The load report: none carried (or not read), recorded, or ignored as malformed. */
  readonly report: 'none' | 'recorded' | 'ignored';
}

const APPLIED: readonly AppliedFeedback[] = [false, true].flatMap((pushback) =>
  (['none', 'recorded', 'ignored'] as const).map((report) => Object.freeze({ pushback, report })),
);

/** The preallocated result (a response allocates nothing here). */
function applied(pushback: boolean, report: AppliedFeedback['report']): AppliedFeedback {
  return APPLIED[(pushback ? 3 : 0) + (report === 'none' ? 0 : report === 'recorded' ? 1 : 2)] as AppliedFeedback;
}

/** True when `response` is pushback (429, 503, RESOURCE_EXHAUSTED). */
export function isPushback(response: AttemptResponse): boolean {
  const status = response.status;
  return (status !== undefined && PUSHBACK_STATUSES.has(status)) || response.grpcStatus === GRPC_RESOURCE_EXHAUSTED;
}

/**
 * Applies what `response` said to `load`: pushback, then (when `readsReports`) its load report.
 *
 * @example
 * applyResponse(load, { status: 429 }, false, clock.now()); // → { pushback: true, report: 'none' }
 */
export function applyResponse(
  load: EndpointLoad,
  response: AttemptResponse,
  readsReports: boolean,
  nowMs: number,
): AppliedFeedback {
  const pushback = isPushback(response);
  if (pushback) load.pushback(nowMs);
  const carried = response.loadReport;
  if (!readsReports || carried === undefined) return applied(pushback, 'none');
  const report = typeof carried === 'string' ? parseLoadReport(carried) : carried;
  if (report === undefined) return applied(pushback, 'ignored');
  load.report(report, nowMs);
  return applied(pushback, 'recorded');
}

/** Response headers as transports hold them: an object by lower-case name, or a flat `[name, value, ...]` list. */
export type ResponseHeaders =
  | Readonly<Record<string, string | readonly string[] | number | undefined>>
  | readonly (string | Buffer)[];

/** The first value of header `name` (lower case) in `headers`, as text; undefined when absent. */
export function headerValue(headers: ResponseHeaders | null | undefined, name: string): string | undefined {
  if (headers === null || headers === undefined) return undefined;
  if (Array.isArray(headers)) {
    const list = headers as readonly (string | Buffer)[];
    for (let i = 0; i + 1 < list.length; i += 2) {
      const key = list[i] as string | Buffer;
      if (key.length === name.length && key.toString('latin1').toLowerCase() === name) {
        return (list[i + 1] as string | Buffer).toString('latin1');
      }
    }
    return undefined;
  }
  const v = (headers as Readonly<Record<string, string | readonly string[] | number | undefined>>)[name];
  if (v === undefined) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  return v[0];
}

/**
 * The `endpoint-load-metrics` value of `headers` when the cluster reads reports
 * (`ClusterInternals.readsReports`), else undefined without looking.
 *
 * @example
 * exchange.loadReport = loadReportHeader(head.headers, internals.readsReports);
 */
export function loadReportHeader(
  headers: ResponseHeaders | null | undefined,
  readsReports: boolean,
): string | undefined {
  return readsReports ? headerValue(headers, LOAD_REPORT_HEADER) : undefined;
}

/**
 * What an HTTP response says for `Attempt.end`: its status, and its `endpoint-load-metrics` value
 * when the cluster reads reports (`ClusterInternals.readsReports`).
 *
 * @example
 * attempt.end(outcome, httpAttemptResponse(res.statusCode, res.headers, internals.readsReports));
 */
export function httpAttemptResponse(
  status: number,
  headers: ResponseHeaders | null | undefined,
  readsReports: boolean,
): AttemptResponse {
  return readsReports ? { status, loadReport: loadReportHeader(headers, true) } : { status };
}

/**
 * What an HTTP/2 response says for `Attempt.end` (the proxy's `h2` clusters): its status, its
 * `grpc-status` (trailers, else a trailers-only head) and, when the cluster reads reports, its
 * `endpoint-load-metrics` value (trailers — where gRPC servers put it — else the head).
 *
 * @example
 * attempt.end(outcome, h2AttemptResponse(status, head, trailers, internals.readsReports));
 */
export function h2AttemptResponse(
  status: number,
  head: ResponseHeaders | undefined,
  trailers: ResponseHeaders | undefined,
  readsReports: boolean,
): AttemptResponse {
  const grpcStatus = grpcStatusOf(headerValue(trailers, 'grpc-status') ?? headerValue(head, 'grpc-status'));
  if (!readsReports) return { status, grpcStatus };
  return { status, grpcStatus, loadReport: loadReportHeader(trailers, true) ?? loadReportHeader(head, true) };
}

/** grpc-js `Metadata`, as far as reading one key goes. */
export interface ReadableMetadata {
  get(key: string): (string | Buffer)[];
}

/**
 * What a gRPC call's end says for `Attempt.end`: its status, and the `endpoint-load-metrics`
 * value (an ASCII metadata entry) of its trailing metadata when the cluster reads reports.
 *
 * @example
 * attempt.end(grpcOutcome(code), grpcAttemptResponse(code, trailers, internals.readsReports));
 */
export function grpcAttemptResponse(
  code: number,
  metadata: ReadableMetadata | null | undefined,
  readsReports: boolean,
): AttemptResponse {
  if (!readsReports || metadata === null || metadata === undefined) return { grpcStatus: code };
  const value = metadata.get(LOAD_REPORT_HEADER)[0];
  return { grpcStatus: code, loadReport: value === undefined ? undefined : value.toString() };
}
