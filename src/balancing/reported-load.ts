/**
 * What endpoints say of themselves, beside what a balancer saw: per load record, the last load
 * report (from a response's `endpoint-load-metrics`), the last probe answer (requests in flight
 * and a latency estimate, asked out of band) and pushback (an answer of 429, 503 or gRPC
 * RESOURCE_EXHAUSTED). `ReportedLoad` is a `LoadTracker`'s second typed array, indexed like its
 * records and allocated on first use, so a balancer whose policy reads none of it pays nothing.
 *
 * "None yet" reads NaN (a figure never reported, a probe never answered, no pushback ever);
 * the counts start at 0. A report without a field leaves that figure as it was.
 *
 * A latency estimate the server does not have — left out of a probe answer, or 0, which older
 * servers said before their first completion — is kept as NaN ("unknown"), never as 0: a server
 * that has served nothing must not look the fastest (`prequal` ranks it by in-flight alone).
 */
import { IN_FLIGHT_METRIC, LATENCY_METRIC, type LoadReport, reportedUtilization } from './load-report.js';

/** The fields of one record's row. */
export const ReportField = Object.freeze({
  /** Utilization from the last report that had one (fraction; may exceed 1). */
  utilization: 0,
  /** Requests per second from the last report that had it. */
  rps: 1,
  /** Errors per second from the last report that had it. */
  eps: 2,
  /** Requests in flight the server last reported (`named_metrics.inflight`). */
  reportedInFlight: 3,
  /** When the last report arrived (clock ms). */
  reportedAtMs: 4,
  /** Reports received, ever. */
  reports: 5,
  /** Requests in flight from the last probe answer. */
  probeInFlight: 6,
  /** Latency estimate (ms) from the last probe answer. */
  probeLatencyMs: 7,
  /** When the last probe answer arrived (clock ms). */
  probedAtMs: 8,
  /** Picks that used the last probe answer so far. */
  probeUses: 9,
  /** When the endpoint last pushed back (clock ms). */
  pushbackAtMs: 10,
  /** Pushback answers received, ever. */
  pushbacks: 11,
  /** The latency estimate (ms) the server last reported (`named_metrics.latency_ms`). */
  reportedLatencyMs: 12,
} as const);

export type ReportFieldName = keyof typeof ReportField;

const STRIDE = 13;
/** Fields per record in `ReportedLoad.rows`. */
export const REPORT_STRIDE = STRIDE;
const COUNTS: readonly number[] = [ReportField.reports, ReportField.probeUses, ReportField.pushbacks];

/** Reported load, probe answers and pushback for the records of one `LoadTracker`, by record index. */
export class ReportedLoad {
  #rows: Float64Array;
  /**
   * Reports and probe answers recorded so far (any record): a picker that scans many records
   * per pick compares it with the count it last saw and skips looking for news when equal.
   */
  changes = 0;

  /** Room for `capacity` records, every row "none yet". */
  constructor(capacity: number) {
    this.#rows = new Float64Array(capacity * STRIDE);
    for (let i = 0; i < capacity; i++) this.clear(i);
  }

  /**
   * The rows themselves: record `index`'s field `f` is `rows[index * REPORT_STRIDE + f]`. For
   * pickers that scan many records per pick; replaced when the table grows, so read it through
   * this getter on every use, never keep it.
   */
  get rows(): Float64Array {
    return this.#rows;
  }

  /** A field of record `index`. */
  field(index: number, field: number): number {
    return this.#rows[index * STRIDE + field] as number;
  }

  /** Records a load report for record `index` (see `EndpointLoad.report`). */
  report(index: number, report: LoadReport, now: number): void {
    const r = this.#rows;
    const row = index * STRIDE;
    const utilization = reportedUtilization(report);
    if (utilization !== undefined) r[row + ReportField.utilization] = utilization;
    if (report.rpsFractional !== undefined) r[row + ReportField.rps] = report.rpsFractional;
    if (report.eps !== undefined) r[row + ReportField.eps] = report.eps;
    const inFlight = report.namedMetrics?.[IN_FLIGHT_METRIC];
    if (inFlight !== undefined) r[row + ReportField.reportedInFlight] = inFlight;
    const latencyMs = report.namedMetrics?.[LATENCY_METRIC];
    if (latencyMs !== undefined) r[row + ReportField.reportedLatencyMs] = latencyMs > 0 ? latencyMs : Number.NaN;
    r[row + ReportField.reportedAtMs] = now;
    r[row + ReportField.reports] = (r[row + ReportField.reports] as number) + 1;
    this.changes++;
  }

  /**
   * Records a probe answer for record `index` (`latencyMs` NaN or 0: unknown); its use count
   * starts again at 0.
   */
  probed(index: number, inFlight: number, latencyMs: number, now: number): void {
    const r = this.#rows;
    const row = index * STRIDE;
    r[row + ReportField.probeInFlight] = inFlight;
    r[row + ReportField.probeLatencyMs] = latencyMs > 0 ? latencyMs : Number.NaN;
    r[row + ReportField.probedAtMs] = now;
    r[row + ReportField.probeUses] = 0;
    this.changes++;
  }

  /** Counts one more pick made on record `index`'s last probe answer; returns the new count. */
  useProbe(index: number): number {
    const at = index * STRIDE + ReportField.probeUses;
    const uses = (this.#rows[at] as number) + 1;
    this.#rows[at] = uses;
    return uses;
  }

  /** Records pushback from record `index`'s endpoint. */
  pushback(index: number, now: number): void {
    const r = this.#rows;
    const row = index * STRIDE;
    r[row + ReportField.pushbackAtMs] = now;
    r[row + ReportField.pushbacks] = (r[row + ReportField.pushbacks] as number) + 1;
  }

  /** Sets record `index`'s row to "none yet" (a new record at a reused index). */
  clear(index: number): void {
    const r = this.#rows;
    const row = index * STRIDE;
    r.fill(Number.NaN, row, row + STRIDE);
    for (const f of COUNTS) r[row + f] = 0;
  }

  /** Copies record `from`'s row of `source` into row `to` here (a pruned record moving out). */
  copyRow(source: ReportedLoad, from: number, to: number): void {
    this.#rows.set(source.#rows.subarray(from * STRIDE, from * STRIDE + STRIDE), to * STRIDE);
  }

  /** Grows to room for `capacity` records, new rows "none yet". */
  grow(capacity: number): void {
    const old = this.#rows;
    const before = old.length / STRIDE;
    if (capacity <= before) return;
    this.#rows = new Float64Array(capacity * STRIDE);
    this.#rows.set(old);
    for (let i = before; i < capacity; i++) this.clear(i);
  }
}

/** The value a field reads before the tracker has made its `ReportedLoad`. */
export function unreportedField(field: number): number {
  return COUNTS.includes(field) ? 0 : Number.NaN;
}
