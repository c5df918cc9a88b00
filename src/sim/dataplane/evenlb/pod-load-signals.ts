/**
 * What a simulated pod would say of its own load, as an evenlb server reports it: requests in
 * flight (in service plus queued), utilization (busy workers over workers, averaged over the
 * last `windowMs` with exponential decay), requests per second over the same window, and a
 * latency estimate at its current load, as Prequal's servers make it: an EWMA (each request
 * weighing 1/8) of the latencies of completed requests per in-flight count they arrived at
 * (0 … 63, the last counting everything above), read at the in-flight count now — the nearest
 * count with a history below it, else above, else the pod's overall EWMA (1/16). So a pod
 * with a queue says it is slow before its completions do. Reports carry it as
 * `named_metrics.latency_ms` beside `named_metrics.inflight`.
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
/** Weight of one completed request in the pod's overall latency estimate. */
const LATENCY_WEIGHT = 1 / 16;
/** Weight of one completed request in its in-flight count's estimate. */
const RIF_LATENCY_WEIGHT = 1 / 8;
/** In-flight counts with an estimate of their own (the last one counts all above). */
const RIF_BUCKETS = 64;

type MutableReport = { -readonly [K in keyof LoadReport]: LoadReport[K] };

export class PodLoadSignals {
  #lastMs = new Float64Array(16);
  /** Busy workers from the last change on. */
  #busy = new Float64Array(16);
  #utilization = new Float64Array(16);
  /** Completions per ms, decayed. */
  #rate = new Float64Array(16);
  #latencyMs = new Float64Array(16);
  /** Pod i's estimate at in-flight count k: `#byRif[i * RIF_BUCKETS + k]`, 0 = none yet. */
  #byRif = new Float64Array(16 * RIF_BUCKETS);
  /** In-flight count each request (by slot) arrived at. */
  #arrivedAt = new Int32Array(64);
  readonly #windowMs: number;
  /** One report object, rewritten for each response (a reader copies what it keeps). */
  readonly #report: MutableReport = { applicationUtilization: 0, rpsFractional: 0, eps: 0 };
  readonly #named: Record<string, number> = { inflight: 0, latency_ms: 0 };

  constructor(windowMs = REPORT_WINDOW_MS) {
    this.#windowMs = windowMs;
    this.#report.namedMetrics = this.#named;
  }

  /** Request `slot` is about to be handed to `pod` (it starts at once if a worker is free). */
  delivered(pod: SimPod, slot: number, nowMs: number): void {
    this.#advance(pod.index, nowMs);
    this.#busy[pod.index] = Math.min(pod.workers, pod.busy + 1);
    if (slot >= this.#arrivedAt.length) {
      const grown = new Int32Array(Math.max(slot + 1, 2 * this.#arrivedAt.length));
      grown.set(this.#arrivedAt);
      this.#arrivedAt = grown;
    }
    this.#arrivedAt[slot] = Math.min(RIF_BUCKETS - 1, pod.busy + pod.queued);
  }

  /** `pod` just completed request `slot` after `latencyMs`; a queued one starts next. */
  completed(pod: SimPod, slot: number, latencyMs: number, nowMs: number): void {
    const i = pod.index;
    this.#advance(i, nowMs);
    this.#busy[i] = Math.min(pod.workers, pod.busy + (pod.queued > 0 ? 1 : 0));
    this.#rate[i] = (this.#rate[i] as number) + 1 / this.#windowMs;
    const last = this.#latencyMs[i] as number;
    this.#latencyMs[i] = last === 0 ? latencyMs : last + (latencyMs - last) * LATENCY_WEIGHT;
    const at = i * RIF_BUCKETS + (this.#arrivedAt[slot] as number);
    const before = this.#byRif[at] as number;
    this.#byRif[at] = before === 0 ? latencyMs : before + (latencyMs - before) * RIF_LATENCY_WEIGHT;
  }

  /** Requests in flight at `pod`: in service plus queued. */
  inFlight(pod: SimPod): number {
    return pod.busy + pod.queued;
  }

  /** `pod`'s latency estimate at its in-flight count now, ms (0 before its first completion). */
  latencyMs(pod: SimPod): number {
    const i = pod.index;
    if (i >= this.#lastMs.length) return 0;
    const base = i * RIF_BUCKETS;
    const rif = Math.min(RIF_BUCKETS - 1, pod.busy + pod.queued);
    for (let k = rif; k >= 0; k--) {
      const v = this.#byRif[base + k] as number;
      if (v > 0) return v;
    }
    for (let k = rif + 1; k < RIF_BUCKETS; k++) {
      const v = this.#byRif[base + k] as number;
      if (v > 0) return v;
    }
    return this.#latencyMs[i] as number;
  }

  /** The report `pod` attaches to a response now. Valid until the next call. */
  report(pod: SimPod, nowMs: number): LoadReport {
    const i = pod.index;
    this.#advance(i, nowMs);
    this.#report.applicationUtilization = (this.#utilization[i] as number) / pod.workers;
    this.#report.rpsFractional = (this.#rate[i] as number) * 1000;
    this.#named.inflight = pod.busy + pod.queued;
    this.#named.latency_ms = this.latencyMs(pod);
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
    const byRif = new Float64Array(capacity * RIF_BUCKETS);
    byRif.set(this.#byRif);
    this.#byRif = byRif;
  }
}
