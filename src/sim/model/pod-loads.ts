/**
 * What every simulated pod knows of its own load, as a server would, in one store: how many
 * of its workers are busy, integrated over time. From that integral come the pod's busy
 * worker-time inside the measured window (the report's utilization: busy time over capacity)
 * and its recent utilization and request rate over a trailing window of `windowMs` to
 * 1.25 × `windowMs` (what a load report or a probe answer says). It also keeps an EWMA of the
 * latencies of the requests each pod completed, with time constant `windowMs`, and — what a
 * Prequal server answers a probe with — a latency estimate per requests-in-flight count: an
 * EWMA (each request weighing 1/8) of the latencies of completed requests that arrived at
 * that count (0 … 63, the last counting everything above), read at a count as the nearest
 * count with a history below it, else above, else the overall EWMA. So a pod with a queue
 * says it is slow before its completions do.
 *
 * Layout, as `PodLatencies` and the load tracker do it: per pod index, a row of the eight
 * figures every request's start and end touch (one cache line) in one `Float64Array`, and a
 * row of the ring — the integral's values at the last five quarter-window boundaries, rolled
 * forward lazily when an update or a read passes one — in another. Every update is O(1) and
 * allocates nothing once the store has grown.
 *
 * Invariant: a pod's calls come in non-decreasing time order (virtual time never goes back).
 */

/** The measured window, shared with the simulation (bounds move as the run opens and closes it). */
export interface MeasuredWindow {
  /** Start of the measured window, ms; Infinity until it opens. */
  startMs: number;
  /** End of the measured window, ms; Infinity until known. */
  endMs: number;
}

/** Quarter-window boundaries kept: the trailing window spans four to five quarters. */
const RING = 5;
// A hot row (one cache line): what every request start and end touches.
const BUSY = 0;
/** Since when `BUSY` has held, ms. */
const SINCE_MS = 1;
/** Busy worker-ms up to `SINCE_MS`, ever and inside the measured window. */
const AREA_MS = 2;
const WINDOW_AREA_MS = 3;
const COMPLETED = 4;
/** The next quarter-window boundary to record, ms. */
const NEXT_BOUNDARY_MS = 5;
const LATENCY_MS = 6;
const LATENCY_AT_MS = 7;
const HOT = 8;
// A ring row: time, integral and completions at each of the last RING boundaries, the entry of
// the latest, and the pod's workers; touched once per quarter-window and by reads.
const RING_AT_MS = 0;
const RING_AREA_MS = RING_AT_MS + RING;
const RING_COMPLETED = RING_AREA_MS + RING;
const HEAD = RING_COMPLETED + RING;
const WORKERS = HEAD + 1;
const COLD = WORKERS + 1;
/** In-flight counts with a latency estimate of their own (the last one counts all above). */
export const IN_FLIGHT_BUCKETS = 64;
/** Weight of one completed request in its in-flight count's latency estimate. */
const IN_FLIGHT_LATENCY_WEIGHT = 1 / 8;

export class PodLoads {
  readonly #window: MeasuredWindow;
  readonly #stepMs: number;
  readonly #timeConstantMs: number;
  #hot: Float64Array;
  #ring: Float64Array;
  /** Pod p's latency estimate at in-flight count k: `#byInFlight[p * IN_FLIGHT_BUCKETS + k]`, 0 = none yet. */
  #byInFlight: Float64Array;

  /** Load figures of pods counted inside `window`, "recent" meaning over the trailing `windowMs`. */
  constructor(window: MeasuredWindow, windowMs: number, pods = 64) {
    this.#window = window;
    this.#stepMs = windowMs / (RING - 1);
    this.#timeConstantMs = windowMs;
    this.#hot = new Float64Array(Math.max(1, pods) * HOT);
    this.#ring = new Float64Array(Math.max(1, pods) * COLD);
    this.#byInFlight = new Float64Array(Math.max(1, pods) * IN_FLIGHT_BUCKETS);
  }

  /** Starts the figures of pod `pod` (of `workers` workers), created at `createdAtMs`. */
  add(pod: number, workers: number, createdAtMs: number): void {
    if ((pod + 1) * HOT > this.#hot.length) {
      const pods = Math.max(pod + 1, (2 * this.#hot.length) / HOT);
      this.#hot = grown(this.#hot, pods * HOT);
      this.#ring = grown(this.#ring, pods * COLD);
      this.#byInFlight = grown(this.#byInFlight, pods * IN_FLIGHT_BUCKETS);
    }
    const h = this.#hot;
    const row = pod * HOT;
    h.fill(0, row, row + HOT);
    h[row + SINCE_MS] = createdAtMs;
    h[row + NEXT_BOUNDARY_MS] = (Math.floor(createdAtMs / this.#stepMs) + 1) * this.#stepMs;
    h[row + LATENCY_AT_MS] = Number.NEGATIVE_INFINITY;
    const c = this.#ring;
    const cold = pod * COLD;
    c.fill(0, cold, cold + COLD);
    c.fill(createdAtMs, cold + RING_AT_MS, cold + RING_AT_MS + RING);
    c[cold + WORKERS] = workers;
    this.#byInFlight.fill(0, pod * IN_FLIGHT_BUCKETS, (pod + 1) * IN_FLIGHT_BUCKETS);
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
   * before, when `arrivedInFlight` requests were at the pod (-1: not known; then only the
   * overall EWMA learns from it). The latency EWMA weighs it by `dt / (dt + windowMs)`, `dt`
   * the time since the previous response: like `1 − e^(−dt / windowMs)` (the same for small
   * and large gaps) without an exponential per request.
   */
  finished(pod: number, nowMs: number, latencyMs: number, arrivedInFlight = -1): void {
    const row = pod * HOT;
    this.#account(pod, row, nowMs);
    const h = this.#hot;
    h[row + BUSY] = (h[row + BUSY] as number) - 1;
    h[row + COMPLETED] = (h[row + COMPLETED] as number) + 1;
    const latency = h[row + LATENCY_MS] as number;
    const elapsed = nowMs - (h[row + LATENCY_AT_MS] as number);
    h[row + LATENCY_MS] =
      elapsed === Number.POSITIVE_INFINITY
        ? latencyMs
        : latency + (elapsed / (elapsed + this.#timeConstantMs)) * (latencyMs - latency);
    h[row + LATENCY_AT_MS] = nowMs;
    if (arrivedInFlight >= 0) {
      const at = pod * IN_FLIGHT_BUCKETS + Math.min(IN_FLIGHT_BUCKETS - 1, arrivedInFlight);
      const before = this.#byInFlight[at] as number;
      this.#byInFlight[at] = before === 0 ? latencyMs : before + (latencyMs - before) * IN_FLIGHT_LATENCY_WEIGHT;
    }
  }

  /**
   * Pod `pod`'s latency estimate for a request arriving when `inFlight` are at the pod, ms:
   * the nearest in-flight count with a history at or below it, else above, else the overall
   * EWMA (0 before the first response).
   */
  latencyAtInFlightMs(pod: number, inFlight: number): number {
    const base = pod * IN_FLIGHT_BUCKETS;
    const k0 = Math.min(IN_FLIGHT_BUCKETS - 1, inFlight);
    const table = this.#byInFlight;
    for (let k = k0; k >= 0; k--) {
      const v = table[base + k] as number;
      if (v > 0) return v;
    }
    for (let k = k0 + 1; k < IN_FLIGHT_BUCKETS; k++) {
      const v = table[base + k] as number;
      if (v > 0) return v;
    }
    return this.recentLatencyMs(pod);
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

  /** EWMA of pod `pod`'s completed requests' latencies (arrival at the pod to response), ms; 0 before the first. */
  recentLatencyMs(pod: number): number {
    return this.#hot[pod * HOT + LATENCY_MS] as number;
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
