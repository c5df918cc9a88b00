/**
 * What every simulated pod knows of its own load, as a server would, in one store: how many
 * of its workers are busy, integrated over time. From that integral come the pod's busy
 * worker-time inside the measured window (the report's utilization: busy time over capacity)
 * and its recent utilization and request rate over a trailing window of `windowMs` to
 * 1.25 × `windowMs` (what a load report or a probe answer says). What a Prequal server answers
 * a probe with — its latency estimate at a requests-in-flight count — comes from the rule
 * `evenlb/server` itself uses (`InFlightLatency`, one row per pod, with its default history
 * age): so a simulated pod says what a real one would, including "unknown" (NaN) before its
 * first completion.
 *
 * Layout, as `PodLatencies` and the load tracker do it: per pod index, a row of the figures
 * every request's start and end touch (one cache line) in one `Float64Array`, and a row of the
 * ring — the integral's values at the last five quarter-window boundaries, rolled forward
 * lazily when an update or a read passes one — in another. Every update is O(1) and allocates
 * nothing once the store has grown.
 *
 * Invariant: a pod's calls come in non-decreasing time order (virtual time never goes back).
 */
import { DEFAULT_LATENCY_MAX_AGE_MS, InFlightLatency } from '../../server/load/in-flight-latency.js';

/** The measured window, shared with the simulation (bounds move as the run opens and closes it). */
export interface MeasuredWindow {
  /** Start of the measured window, ms; Infinity until it opens. */
  startMs: number;
  /** End of the measured window, ms; Infinity until known. */
  endMs: number;
}

/** Quarter-window boundaries kept: the trailing window spans four to five quarters. */
const RING = 5;
// A hot row (one cache line, padded): what every request start and end touches.
const BUSY = 0;
/** Since when `BUSY` has held, ms. */
const SINCE_MS = 1;
/** Busy worker-ms up to `SINCE_MS`, ever and inside the measured window. */
const AREA_MS = 2;
const WINDOW_AREA_MS = 3;
const COMPLETED = 4;
/** The next quarter-window boundary to record, ms. */
const NEXT_BOUNDARY_MS = 5;
const HOT = 8;
// A ring row: time, integral and completions at each of the last RING boundaries, the entry of
// the latest, and the pod's workers; touched once per quarter-window and by reads.
const RING_AT_MS = 0;
const RING_AREA_MS = RING_AT_MS + RING;
const RING_COMPLETED = RING_AREA_MS + RING;
const HEAD = RING_COMPLETED + RING;
const WORKERS = HEAD + 1;
const COLD = WORKERS + 1;

export class PodLoads {
  readonly #window: MeasuredWindow;
  readonly #stepMs: number;
  #hot: Float64Array;
  #ring: Float64Array;
  /** Pod p's latency estimates by in-flight count: row p. */
  readonly #latency: InFlightLatency;

  /** Load figures of pods counted inside `window`, "recent" meaning over the trailing `windowMs`. */
  constructor(window: MeasuredWindow, windowMs: number, pods = 64) {
    this.#window = window;
    this.#stepMs = windowMs / (RING - 1);
    this.#hot = new Float64Array(Math.max(1, pods) * HOT);
    this.#ring = new Float64Array(Math.max(1, pods) * COLD);
    this.#latency = new InFlightLatency(DEFAULT_LATENCY_MAX_AGE_MS, pods);
  }

  /** Starts the figures of pod `pod` (of `workers` workers), created at `createdAtMs`. */
  add(pod: number, workers: number, createdAtMs: number): void {
    if ((pod + 1) * HOT > this.#hot.length) {
      const pods = Math.max(pod + 1, (2 * this.#hot.length) / HOT);
      this.#hot = grown(this.#hot, pods * HOT);
      this.#ring = grown(this.#ring, pods * COLD);
    }
    this.#latency.ensure(pod);
    this.#latency.clear(pod);
    const h = this.#hot;
    const row = pod * HOT;
    h.fill(0, row, row + HOT);
    h[row + SINCE_MS] = createdAtMs;
    h[row + NEXT_BOUNDARY_MS] = (Math.floor(createdAtMs / this.#stepMs) + 1) * this.#stepMs;
    const c = this.#ring;
    const cold = pod * COLD;
    c.fill(0, cold, cold + COLD);
    c.fill(createdAtMs, cold + RING_AT_MS, cold + RING_AT_MS + RING);
    c[cold + WORKERS] = workers;
  }

  /** Workers of pod `pod` busy now. */
  busy(pod: number): number {
    return this.#hot[pod * HOT + BUSY] as number;
  }

  /** A worker of pod `pod` took a request at `nowMs`. */
  started(pod: number, nowMs: number): void {
    const row = pod * HOT;
    this.#account(pod, row, nowMs);
    const h = this.#hot;
    h[row + BUSY] = (h[row + BUSY] as number) + 1;
  }

  /**
   * A worker of pod `pod` finished, at `nowMs`, a request that reached the pod `latencyMs`
   * before, when `arrivedInFlight` requests were at the pod.
   */
  finished(pod: number, nowMs: number, latencyMs: number, arrivedInFlight: number): void {
    const row = pod * HOT;
    this.#account(pod, row, nowMs);
    const h = this.#hot;
    h[row + BUSY] = (h[row + BUSY] as number) - 1;
    h[row + COMPLETED] = (h[row + COMPLETED] as number) + 1;
    this.#latency.observe(pod, arrivedInFlight, latencyMs, nowMs);
  }

  /**
   * Pod `pod`'s latency estimate at `nowMs` for a request arriving when `inFlight` are at the
   * pod, ms (`InFlightLatency.estimate`); NaN before its first completion.
   */
  latencyAtInFlightMs(pod: number, inFlight: number, nowMs: number): number {
    return this.#latency.estimate(pod, inFlight, nowMs);
  }

  /** Busy worker-ms of pod `pod` inside the measured window up to `nowMs` (at most the window's end). */
  windowBusyMs(pod: number, nowMs: number): number {
    const row = pod * HOT;
    this.#account(pod, row, nowMs);
    return this.#hot[row + WINDOW_AREA_MS] as number;
  }

  /** Busy workers over workers of pod `pod`, averaged over the trailing window up to `nowMs` (0..1). */
  recentUtilization(pod: number, nowMs: number): number {
    const row = pod * HOT;
    this.#account(pod, row, nowMs);
    const h = this.#hot;
    const c = this.#ring;
    const cold = pod * COLD;
    const oldest = ((c[cold + HEAD] as number) + 1) % RING;
    const spanMs = nowMs - (c[cold + RING_AT_MS + oldest] as number);
    const workers = c[cold + WORKERS] as number;
    if (spanMs <= 0) return (h[row + BUSY] as number) / workers;
    return ((h[row + AREA_MS] as number) - (c[cold + RING_AREA_MS + oldest] as number)) / (spanMs * workers);
  }

  /** Requests pod `pod` completed per second over the trailing window up to `nowMs`. */
  recentRequestsPerSecond(pod: number, nowMs: number): number {
    const row = pod * HOT;
    this.#account(pod, row, nowMs);
    const c = this.#ring;
    const cold = pod * COLD;
    const oldest = ((c[cold + HEAD] as number) + 1) % RING;
    const spanMs = nowMs - (c[cold + RING_AT_MS + oldest] as number);
    if (spanMs <= 0) return 0;
    return (((this.#hot[row + COMPLETED] as number) - (c[cold + RING_COMPLETED + oldest] as number)) * 1000) / spanMs;
  }

  /** Brings pod `pod`'s integrals (hot row at `row`) up to `nowMs`, rolling its ring past any boundary. */
  #account(pod: number, row: number, nowMs: number): void {
    const h = this.#hot;
    const since = h[row + SINCE_MS] as number;
    if (nowMs <= since) return;
    if (nowMs >= (h[row + NEXT_BOUNDARY_MS] as number)) this.#roll(pod, row, nowMs);
    const busy = h[row + BUSY] as number;
    h[row + AREA_MS] = (h[row + AREA_MS] as number) + busy * (nowMs - since);
    const w = this.#window;
    const from = Math.max(since, w.startMs);
    const to = Math.min(nowMs, w.endMs);
    if (to > from) h[row + WINDOW_AREA_MS] = (h[row + WINDOW_AREA_MS] as number) + busy * (to - from);
    h[row + SINCE_MS] = nowMs;
  }

  /** Records the integral at every boundary in (since, nowMs]; the busy count held all along. */
  #roll(pod: number, row: number, nowMs: number): void {
    const h = this.#hot;
    const c = this.#ring;
    const cold = pod * COLD;
    const step = this.#stepMs;
    const last = Math.floor(nowMs / step);
    // Only the last RING boundaries matter: skip the ones an idle stretch left behind.
    let k = Math.max(Math.round((h[row + NEXT_BOUNDARY_MS] as number) / step), last - (RING - 1));
    const since = h[row + SINCE_MS] as number;
    const area = h[row + AREA_MS] as number;
    const busy = h[row + BUSY] as number;
    let head = c[cold + HEAD] as number;
    for (; k <= last; k++) {
      const atMs = k * step;
      head = (head + 1) % RING;
      c[cold + RING_AT_MS + head] = atMs;
      c[cold + RING_AREA_MS + head] = area + busy * (atMs - since);
      c[cold + RING_COMPLETED + head] = h[row + COMPLETED] as number;
    }
    c[cold + HEAD] = head;
    h[row + NEXT_BOUNDARY_MS] = k * step;
  }
}

function grown(old: Float64Array, length: number): Float64Array {
  const next = new Float64Array(length);
  next.set(old);
  return next;
}
