/**
 * What a simulation run counts, and where the measured window lies. Requests are counted as
 * they are sent, delivered (per pod and time bucket; inside the window: per pod, to removed
 * pods, across zones) and completed (latency of requests sent inside the window, per run and
 * per pod); probes as the dataplane reports them; every pod's busy time and what it would
 * report of itself (`PodLoads`). The window is one object shared with the pods' load figures,
 * whose busy time counts only inside it; its bounds are Infinity until the run opens and
 * closes it. `outcome()` hands the counts over when the run ends.
 */
import { LatencyHistogram } from '../metrics/latency-histogram.js';
import { PodLatencies } from '../metrics/pod-latencies.js';
import { type MeasuredWindow, PodLoads } from './pod-loads.js';
import { PodSeries } from './pod-series.js';
import { POD_HISTOGRAM_GROWTH, type SimPod } from './sim-pod.js';
import type { SimulationOutcome } from './simulation-outcome.js';

/** The counts of a `SimulationOutcome`; the run adds the rest. */
export type MeasuredCounts = Pick<
  SimulationOutcome,
  | 'windowStartMs'
  | 'windowEndMs'
  | 'bucketMs'
  | 'latency'
  | 'requestsSent'
  | 'requestsFailed'
  | 'windowRequests'
  | 'windowRequestsToRemovedPods'
  | 'windowRequestsCrossZone'
  | 'probesSent'
  | 'windowProbesSent'
>;

export class RunMeasurement {
  /** The measured window; Infinity bounds until it opens and closes. */
  readonly window: MeasuredWindow = { startMs: Number.POSITIVE_INFINITY, endMs: Number.POSITIVE_INFINITY };
  /** Every pod's load figures: busy time inside `window`, and what it reports of itself. */
  readonly loads: PodLoads;
  readonly #latency = new LatencyHistogram();
  readonly #podLatencies: PodLatencies;
  readonly #series: PodSeries;
  #sent = 0;
  #failed = 0;
  #windowRequests = 0;
  #windowToRemoved = 0;
  #windowCrossZone = 0;
  #probes = 0;
  #windowProbes = 0;

  /**
   * `bucketMs`: width of the per-pod series buckets; `pods`: initial capacity of per-pod stores;
   * `loadWindowMs`: "recent" for what pods report of themselves (`server.loadWindowMs`).
   */
  constructor(bucketMs: number, pods: number, loadWindowMs: number) {
    this.#series = new PodSeries(bucketMs);
    this.#podLatencies = new PodLatencies(POD_HISTOGRAM_GROWTH, pods);
    this.loads = new PodLoads(this.window, loadWindowMs, pods);
  }

  /** `t` lies inside the measured window. */
  inWindow(t: number): boolean {
    return t >= this.window.startMs && t < this.window.endMs;
  }

  sent(): void {
    this.#sent++;
  }

  failed(): void {
    this.#failed++;
  }

  probeSent(nowMs: number): void {
    this.#probes++;
    if (this.inWindow(nowMs)) this.#windowProbes++;
  }

  /** A request from a client in zone `clientZone` (-1: none) reached `pod` at `nowMs`. */
  delivered(nowMs: number, pod: SimPod, podCount: number, clientZone: number): void {
    this.#series.count(nowMs, pod.index, podCount);
    pod.totalRequests++;
    if (!this.inWindow(nowMs)) return;
    pod.windowRequests++;
    this.#windowRequests++;
    if (pod.state !== 'ready') this.#windowToRemoved++;
    if (pod.zone >= 0 && clientZone !== pod.zone) this.#windowCrossZone++;
  }

  /** A request sent at `sentMs` got its response from `pod` at `nowMs`. */
  completed(nowMs: number, sentMs: number, pod: SimPod): void {
    if (!this.inWindow(sentMs)) return;
    const ms = nowMs - sentMs;
    const logScaled = Math.log(ms / LatencyHistogram.MIN_MS);
    this.#latency.recordWithLog(ms, logScaled);
    this.#podLatencies.record(pod.index, ms, logScaled);
  }

  /** Fills in every pod's series, latency histogram, busy and ready time in the window. */
  finish(pods: readonly SimPod[]): void {
    this.#series.copyTo(pods);
    const w = this.window;
    for (const pod of pods) {
      pod.latency = this.#podLatencies.histogram(pod.index);
      pod.windowBusyMs = pod.windowBusyMsAt(w.endMs);
      const from = Math.max(pod.readyAtMs ?? Number.POSITIVE_INFINITY, w.startMs);
      const to = Math.min(pod.removedAtMs ?? Number.POSITIVE_INFINITY, w.endMs);
      pod.windowReadyMs = to > from ? to - from : 0;
    }
  }

  outcome(): MeasuredCounts {
    return {
      windowStartMs: this.window.startMs,
      windowEndMs: this.window.endMs,
      bucketMs: this.#series.bucketMs,
      latency: this.#latency,
      requestsSent: this.#sent,
      requestsFailed: this.#failed,
      windowRequests: this.#windowRequests,
      windowRequestsToRemovedPods: this.#windowToRemoved,
      windowRequestsCrossZone: this.#windowCrossZone,
      probesSent: this.#probes,
      windowProbesSent: this.#windowProbes,
    };
  }
}
