/**
 * What a simulated pod would say of its own load, as an evenlb server reports it: requests in
 * flight (in service plus queued), utilization (busy workers over workers, averaged over the
 * last `windowMs` with exponential decay), requests per second over the same window, and a
 * latency estimate (an EWMA of the latencies of its completed requests, each weighing 1/16).
 *
 * The dataplane sees every change of a pod's busy count — a request delivered to it (picked
 * here) and a request completed (`RequestRouter.done`, after which a queued one starts at
 * once) — so it integrates the busy time itself and reads `SimPod` only (`busy`, `queued`,
 * `workers`). Figures live in typed arrays by pod index, grown as pods are created; updating
 * them allocates nothing.
 */
import type { LoadReport } from '../../../balancing/load-report.js';
import type { SimPod } from '../../model/sim-pod.js';

/** Window of the utilization and rate averages, ms: about what a server reports over. */
export const REPORT_WINDOW_MS = 1000;
/** Weight of one completed request in the latency estimate. */
const LATENCY_WEIGHT = 1 / 16;

type MutableReport = { -readonly [K in keyof LoadReport]: LoadReport[K] };

export class PodLoadSignals {
  #lastMs = new Float64Array(16);
  /** Busy workers from the last change on. */
  #busy = new Float64Array(16);
  #utilization = new Float64Array(16);
  /** Completions per ms, decayed. */
  #rate = new Float64Array(16);
  #latencyMs = new Float64Array(16);
  readonly #windowMs: number;
  /** One report object, rewritten for each response (a reader copies what it keeps). */
  readonly #report: MutableReport = { applicationUtilization: 0, rpsFractional: 0, eps: 0 };
  readonly #named: Record<string, number> = { inflight: 0 };

  constructor(windowMs = REPORT_WINDOW_MS) {
    this.#windowMs = windowMs;
    this.#report.namedMetrics = this.#named;
  }

  /** A request was just handed to `pod` (it starts at once if a worker is free). */
  delivered(pod: SimPod, nowMs: number): void {
    this.#advance(pod.index, nowMs);
    this.#busy[pod.index] = Math.min(pod.workers, pod.busy + 1);
  }

  /** `pod` just completed a request after `latencyMs`; a queued one starts next. */
  completed(pod: SimPod, latencyMs: number, nowMs: number): void {
    const i = pod.index;
    this.#advance(i, nowMs);
    this.#busy[i] = Math.min(pod.workers, pod.busy + (pod.queued > 0 ? 1 : 0));
    this.#rate[i] = (this.#rate[i] as number) + 1 / this.#windowMs;
    const last = this.#latencyMs[i] as number;
    this.#latencyMs[i] = last === 0 ? latencyMs : last + (latencyMs - last) * LATENCY_WEIGHT;
  }

  /** Requests in flight at `pod`: in service plus queued. */
  inFlight(pod: SimPod): number {
    return pod.busy + pod.queued;
  }

  /** `pod`'s latency estimate, ms (0 before its first completion). */
  latencyMs(pod: SimPod): number {
    return this.#latencyMs[pod.index] ?? 0;
  }

  /** The report `pod` attaches to a response now. Valid until the next call. */
  report(pod: SimPod, nowMs: number): LoadReport {
    const i = pod.index;
    this.#advance(i, nowMs);
    this.#report.applicationUtilization = (this.#utilization[i] as number) / pod.workers;
    this.#report.rpsFractional = (this.#rate[i] as number) * 1000;
    this.#named.inflight = pod.busy + pod.queued;
    return this.#report;
  }

  /** Decays pod `i`'s averages to `nowMs`, counting the busy workers since the last change. */
  #advance(i: number, nowMs: number): void {
    if (i >= this.#lastMs.length) this.#grow(i + 1);
    const elapsed = nowMs - (this.#lastMs[i] as number);
    if (elapsed <= 0) return;
    const keep = Math.exp(-elapsed / this.#windowMs);
    this.#utilization[i] = (this.#utilization[i] as number) * keep + (this.#busy[i] as number) * (1 - keep);
    this.#rate[i] = (this.#rate[i] as number) * keep;
    this.#lastMs[i] = nowMs;
  }

  #grow(size: number): void {
    const capacity = Math.max(size, 2 * this.#lastMs.length);
    const grown = (old: Float64Array): Float64Array<ArrayBuffer> => {
      const next = new Float64Array(capacity);
      next.set(old);
      return next;
    };
    this.#lastMs = grown(this.#lastMs);
    this.#busy = grown(this.#busy);
    this.#utilization = grown(this.#utilization);
    this.#rate = grown(this.#rate);
    this.#latencyMs = grown(this.#latencyMs);
  }
}
