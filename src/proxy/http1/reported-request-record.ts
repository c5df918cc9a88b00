/**
 * The raw HTTP/1.1 data path with load reporting (`listeners[].loadReport`): a connection of a
 * reporting listener takes these two in place of `RequestRecord` and `RawDownstreamSink`
 * (chosen once, when the connection is made), so a listener without reporting runs the same
 * code as before, not a branch per request. `ReportedRequestRecord` counts each forwarded
 * request with the listener's `LoadReporter` from the moment it is routed to its answer —
 * response complete, local reply, cut, client gone — and ends whatever is still counted when
 * the connection closes (a request body refused after its head went upstream), so requests in
 * flight always return to 0. Status ≥ 500 and cuts count as errors; a client that left does
 * not. `ReportingRawSink` adds the report to the response head unless the upstream's has one,
 * and counts which it was in the listener's `LoadReportCounts`.
 */
import type { Socket } from 'node:net';
import { LOAD_REPORT_HEADER } from '../../balancing/load-report.js';
import type { LoadReportCounts } from '../../metrics/proxy-metrics.js';
import type { LoadReporter, ReportedRequest } from '../../server/load/load-reporter.js';
import { hasLoadReport, type ListenerLoad } from '../listener/listener-load.js';
import type { Http1Context } from './http1-context.js';
import type { ResponseHead } from './message-head.js';
import { type RawConnectionOwner, RawDownstreamSink } from './raw-downstream-sink.js';
import { RequestRecord } from './request-record.js';

export class ReportedRequestRecord extends RequestRecord {
  readonly #reporter: LoadReporter;
  /** The listener's report counts (`ReportingRawSink` adds to them). */
  readonly counts: LoadReportCounts;
  #request: ReportedRequest | undefined;

  constructor(ctx: Http1Context<unknown>, client: string, load: ListenerLoad) {
    super(ctx, client);
    this.#reporter = load.reporter;
    this.counts = load.counts;
  }

  /** The request being answered, while it is counted. */
  get request(): ReportedRequest | undefined {
    return this.#request;
  }

  override forwarded(path: string): void {
    super.forwarded(path);
    this.#request?.end(false);
    this.#request = this.#reporter.begin();
  }

  override answered(status: number, reason: string | undefined, cluster: string): void {
    const request = this.#request;
    if (request !== undefined) {
      this.#request = undefined;
      request.end(status >= 500 || (status === 0 && reason !== 'client-closed'));
    }
    super.answered(status, reason, cluster);
  }

  override close(): void {
    const request = this.#request;
    this.#request = undefined;
    request?.end(true);
  }
}

export class ReportingRawSink extends RawDownstreamSink {
  readonly #record: ReportedRequestRecord;

  constructor(socket: Socket, owner: RawConnectionOwner, record: ReportedRequestRecord) {
    super(socket, owner);
    this.#record = record;
  }

  override head(head: ResponseHead): void {
    const record = this.#record;
    let value: string | undefined;
    if (hasLoadReport(head.headers)) record.counts.passed++;
    else {
      value = record.request?.reportValue();
      if (value !== undefined) record.counts.attached++;
    }
    // A copy: the exchange still reads the upstream's own headers (its load report among them).
    super.head(value === undefined ? head : { ...head, headers: [...head.headers, LOAD_REPORT_HEADER, value] });
  }
}

/**
 * The record and response side of a new data-path connection: the reporting pair when its
 * listener reports load (`ctx.load`), else the plain one.
 *
 * @example
 * const { record, sink } = recordAndSink(ctx, socket, owner, socket.remoteAddress ?? '');
 */
export function recordAndSink(
  ctx: Http1Context<unknown>,
  socket: Socket,
  owner: RawConnectionOwner,
  client: string,
): { record: RequestRecord; sink: RawDownstreamSink } {
  if (ctx.load === undefined)
    return { record: new RequestRecord(ctx, client), sink: new RawDownstreamSink(socket, owner) };
  const record = new ReportedRequestRecord(ctx, client, ctx.load);
  return { record, sink: new ReportingRawSink(socket, owner, record) };
}
