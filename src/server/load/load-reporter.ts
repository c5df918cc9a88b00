/**
 * A server's own load, as it reports it: to clients on responses (the ORCA
 * `endpoint-load-metrics` header, TEXT form — `cpu_utilization`, `application_utilization`,
 * `rps_fractional`, `eps`, `named_metrics.inflight`, `named_metrics.latency_ms`) and to load
 * probes (the load document's `inFlight` and `latencyMs`; see `load-document.ts`).
 *
 * Sampled and cheap: the utilizations and rates are recomputed once per `periodMs` on a timer
 * (exponentially averaged over `windowMs`); a response only copies a header value built at most
 * once per period for each in-flight count (the report's `inflight` and its latency at that
 * count), so the work per response is a counter, an array read and one header set. With
 * `sampleRate` below 1 only that share of responses carries it (every ⌈1/rate⌉-th on average;
 * no randomness).
 *
 * Requests are counted from `begin()` to their `ReportedRequest.end()`: requests in flight now,
 * completions and errors per second, and each request's latency by the in-flight count it
 * arrived at (`InFlightLatency`). Reading the clock costs about as much as the rest of a
 * request's counting, so above `LATENCY_SAMPLES_PER_SECOND` completions per second (the last
 * period's rate) only every k-th request is timed, k chosen per period to keep about that many
 * latency samples a second — plenty for the estimates, and the clock is read twice per k
 * requests instead of twice per request. Every request is still counted. A response's report counts the other requests in flight
 * (its own is finishing); a probe's counts them all, and its latency is what a request arriving
 * now could expect.
 *
 * `close()` stops the timer; the reporter keeps answering with its last figures.
 *
 * @example
 * const reporter = new LoadReporter({ applicationUtilization: () => busyWorkers / workers });
 * const request = reporter.begin();
 * res.setHeader('endpoint-load-metrics', request.reportValue() ?? '');
 * res.end(body, () => request.end(res.statusCode >= 500));
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import type { ProbeAnswer } from '../../balancing/load-document.js';
import { formatLoadReport, IN_FLIGHT_METRIC, LATENCY_METRIC, type LoadReport } from '../../balancing/load-report.js';
import type { Clock, TimerHandle } from '../../core/clock.js';
import { parseOptions } from '../../core/options.js';
import { IN_FLIGHT_BUCKETS, InFlightLatency } from './in-flight-latency.js';
import { type LoadReporterOptions, loadReporterSpec, type ParsedLoadReporterOptions } from './load-reporter-options.js';

/**
 * Above this many completions per second, only every k-th request is timed (keeping about this
 * many latency samples a second).
 */
export const LATENCY_SAMPLES_PER_SECOND = 1000;

/** What a reporter has measured. */
export interface LoadReporterStats {
  /** Requests begun, ever. */
  readonly requests: number;
  /** Requests in flight now. */
  readonly inFlight: number;
  /** The figures of the last period (as reported). */
  readonly report: LoadReport;
  /** Responses that carried a report, ever. */
  readonly reportsAttached: number;
}

/** Set by `LoadReporter`'s static block: counts a request's end. */
let endRequest: (reporter: LoadReporter, request: ReportedRequest, failed: boolean) => void;

/** One request as the reporter counts it: `reportValue()` for its response, then `end()`. */
export class ReportedRequest {
  readonly #reporter: LoadReporter;
  /** When it began, clock ms; NaN when this request is not timed (see the module comment). */
  readonly startMs: number;
  /** Other requests in flight when it arrived. */
  readonly arrivedInFlight: number;
  #ended = false;

  constructor(reporter: LoadReporter, startMs: number, arrivedInFlight: number) {
    this.#reporter = reporter;
    this.startMs = startMs;
    this.arrivedInFlight = arrivedInFlight;
  }

  /** The `endpoint-load-metrics` value for this request's response, or undefined when this response is not sampled. */
  reportValue(): string | undefined {
    return this.#reporter.headerValue(this.#ended ? 0 : 1);
  }

  /** The request is over; `failed` counts it in `eps`. Later calls are ignored. */
  end(failed = false): void {
    if (this.#ended) return;
    this.#ended = true;
    endRequest(this.#reporter, this, failed);
  }
}

export class LoadReporter {
  readonly options: ParsedLoadReporterOptions;
  readonly #clock: Clock;
  readonly #latency: InFlightLatency;
  readonly #cores: number;
  readonly #cpuUsage: (() => number) | undefined;
  #inFlight = 0;
  #requests = 0;
  #completed = 0;
  #errors = 0;
  #attached = 0;
  /** Time every `#timeEvery`-th request; `#sinceTimed` counts the requests begun since the last one timed. */
  #timeEvery = 1;
  #sinceTimed = 0;
  /** [sampling credit]: a typed slot, so adding a fraction never boxes a number. */
  readonly #credit = new Float64Array(1);
  #lastTickMs: number;
  #lastCpuMicros: number;
  #rps = 0;
  #eps = 0;
  #cpu = 0;
  #app: number | undefined;
  /** Header values of this period by in-flight count (built on first use). */
  #headers: (string | undefined)[] = new Array<string | undefined>(IN_FLIGHT_BUCKETS).fill(undefined);
  #report: LoadReport = Object.freeze({});
  #timer: TimerHandle | undefined;
  #closed = false;

  static {
    endRequest = (reporter, request, failed) => reporter.#ended(request, failed);
  }

  constructor(options: LoadReporterOptions = {}) {
    this.options = parseOptions('LoadReporter', options, loadReporterSpec);
    const o = this.options;
    this.#clock = o.clock;
    this.#latency = new InFlightLatency(o.latencyMaxAgeMs);
    this.#cores = o.cpuCores ?? cpuLimitCores();
    this.#cpuUsage = o.cpu ? (o.cpuUsageMicros ?? processCpuMicros) : undefined;
    this.#lastTickMs = this.#clock.now();
    this.#lastCpuMicros = this.#cpuUsage?.() ?? 0;
    this.#tick(false);
  }

  /** Requests in flight now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Counts a request from now until its `end()`. */
  begin(): ReportedRequest {
    let startMs = Number.NaN;
    if (++this.#sinceTimed >= this.#timeEvery) {
      this.#sinceTimed = 0;
      startMs = this.#clock.now();
    }
    const request = new ReportedRequest(this, startMs, this.#inFlight);
    this.#inFlight++;
    this.#requests++;
    return request;
  }

  /**
   * The header value for a response while `own` of the requests in flight are the ones being
   * answered (1 for a request in flight, 0 once it ended); undefined when not sampled.
   */
  headerValue(own: number): string | undefined {
    const rate = this.options.sampleRate;
    if (rate < 1) {
      const credit = this.#credit;
      credit[0]! += rate;
      if (credit[0]! < 1) return undefined;
      credit[0]! -= 1;
    }
    const others = this.#inFlight > own ? this.#inFlight - own : 0;
    this.#attached++;
    if (others >= IN_FLIGHT_BUCKETS) return this.#format(others);
    let value = this.#headers[others];
    if (value === undefined) {
      value = this.#format(others);
      // Not kept while the latency is unknown: the first completion makes it known.
      if (this.#latency.observed(0) > 0) this.#headers[others] = value;
    }
    return value;
  }

  /**
   * The probe answer now: every request in flight, and the latency a request arriving now can
   * expect — left out before the first completion (the server does not know it yet).
   */
  probeAnswer(): ProbeAnswer {
    const inFlight = this.#inFlight;
    const latencyMs = this.#latency.estimate(0, inFlight, this.#clock.now());
    return Number.isNaN(latencyMs) ? { inFlight } : { inFlight, latencyMs };
  }

  /** The figures of the last period (without the per-response named metrics). */
  report(): LoadReport {
    return this.#report;
  }

  stats(): LoadReporterStats {
    return Object.freeze({
      requests: this.#requests,
      inFlight: this.#inFlight,
      report: this.#report,
      reportsAttached: this.#attached,
    });
  }

  /** Stops the period timer; idempotent. Later reports carry the last figures. */
  close(): void {
    this.#closed = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  #ended(request: ReportedRequest, failed: boolean): void {
    if (this.#inFlight > 0) this.#inFlight--;
    this.#completed++;
    if (failed) this.#errors++;
    if (Number.isNaN(request.startMs)) return;
    const now = this.#clock.now();
    this.#latency.observe(0, request.arrivedInFlight, now - request.startMs, now);
  }

  /** The header value for `others` in flight; without `latency_ms` before the first completion (unknown). */
  #format(others: number): string {
    const latencyMs = this.#latency.estimate(0, others, this.#clock.now());
    return formatLoadReport({
      ...this.#report,
      namedMetrics: Number.isNaN(latencyMs)
        ? { [IN_FLIGHT_METRIC]: others }
        : { [IN_FLIGHT_METRIC]: others, [LATENCY_METRIC]: latencyMs },
    });
  }

  /** Recomputes the period's figures; `advance` false only for the first, at construction. */
  #tick(advance: boolean): void {
    const now = this.#clock.now();
    if (advance) {
      const elapsedMs = now - this.#lastTickMs;
      if (elapsedMs > 0) {
        const keep = Math.exp(-elapsedMs / this.options.windowMs);
        const blend = (old: number, sample: number) => old * keep + sample * (1 - keep);
        this.#rps = blend(this.#rps, (this.#completed * 1000) / elapsedMs);
        this.#eps = blend(this.#eps, (this.#errors * 1000) / elapsedMs);
        if (this.#cpuUsage !== undefined) {
          const micros = this.#cpuUsage();
          const used = Math.max(0, micros - this.#lastCpuMicros) / (elapsedMs * 1000 * this.#cores);
          this.#lastCpuMicros = micros;
          this.#cpu = blend(this.#cpu, used);
        }
        this.#completed = 0;
        this.#errors = 0;
        this.#lastTickMs = now;
      }
    }
    this.#timeEvery = this.#rps > LATENCY_SAMPLES_PER_SECOND ? Math.round(this.#rps / LATENCY_SAMPLES_PER_SECOND) : 1;
    const app = this.options.applicationUtilization?.();
    this.#app = typeof app === 'number' && Number.isFinite(app) && app >= 0 ? app : undefined;
    this.#report = Object.freeze({
      ...(this.#cpuUsage === undefined ? {} : { cpuUtilization: this.#cpu }),
      ...(this.#app === undefined ? {} : { applicationUtilization: this.#app }),
      rpsFractional: this.#rps,
      eps: this.#eps,
    });
    this.#headers = new Array<string | undefined>(IN_FLIGHT_BUCKETS).fill(undefined);
    if (this.#closed) return;
    this.#timer = this.#clock.setTimeout(() => this.#tick(true), this.options.periodMs);
  }
}

/** CPU time this process has used, µs (user + system). */
function processCpuMicros(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/**
 * The CPU quota of this process's cgroup v2 (`cpu.max`: quota over period, in CPUs — a
 * container's `limits.cpu`), or undefined without a limit or the file.
 *
 * @example
 * cgroupCpuQuota(); // 1.5 for `limits.cpu: 1500m`, undefined for `max 100000`
 */
export function cgroupCpuQuota(read: (path: string) => string = (p) => readFileSync(p, 'utf8')): number | undefined {
  let text: string;
  try {
    text = read('/sys/fs/cgroup/cpu.max');
  } catch {
    return undefined;
  }
  const [quota, period] = text.trim().split(/\s+/);
  return quota === undefined || quota === 'max' ? undefined : Number(quota) / Number(period);
}

/**
 * The CPUs this process may use: the cgroup CPU limit when one is set (cgroup v2 `cpu.max`, or
 * v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`: a Kubernetes pod's `limits.cpu`), at most the
 * host's available parallelism.
 */
export function cpuLimitCores(read: (path: string) => string = (p) => readFileSync(p, 'utf8')): number {
  const host = availableParallelism();
  const tryRead = (path: string): string | undefined => {
    try {
      return read(path).trim();
    } catch {
      return undefined;
    }
  };
  let quota = cgroupCpuQuota(read);
  if (quota === undefined) {
    const q = Number(tryRead('/sys/fs/cgroup/cpu/cpu.cfs_quota_us'));
    const p = Number(tryRead('/sys/fs/cgroup/cpu/cpu.cfs_period_us'));
    if (q > 0 && p > 0) quota = q / p;
  }
  return quota !== undefined && Number.isFinite(quota) && quota > 0 ? Math.min(host, quota) : host;
}
