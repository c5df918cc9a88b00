/**
 * A server's latency estimate at a given number of requests in flight, as Prequal's servers
 * make it: an exponentially weighted mean (each request weighing 1/8) of the latencies of
 * completed requests, kept per in-flight count they arrived at (0 … 63, the last counting
 * everything above), read at the count asked — the nearest count at or below it with a recent
 * history, else the nearest above, else the overall mean (1/16). So a server with a queue says
 * it is slow before its completions do, and an idle one says what an idle request costs.
 *
 * Before its first completion a server has no history and says so: `estimate` reads NaN
 * ("unknown"), never 0 — a 0 would make a server that has served nothing (a pod a scale-out
 * just added) look the fastest of all to a balancer comparing latencies.
 *
 * A count's history older than `maxAgeMs` is not read (a burst long ago says little about now).
 *
 * One table holds the estimates of `rows` servers (a real server uses row 0; the simulator one
 * row per pod), in one `Float64Array`: per row, a (latency, time) pair per in-flight count, then
 * the overall mean and the completions seen. Sized once (grown by doubling when asked);
 * `observe` and `estimate` allocate nothing.
 */

/** In-flight counts with an estimate of their own (the last one counts everything above). */
export const IN_FLIGHT_BUCKETS = 64;
/** The default age past which a count's history is not read, ms (`LoadReporter`'s `latencyMaxAgeMs`). */
export const DEFAULT_LATENCY_MAX_AGE_MS = 30_000;
/** Weight of one completed request in its in-flight count's estimate. */
const BUCKET_WEIGHT = 1 / 8;
/** Weight of one completed request in the overall estimate. */
const OVERALL_WEIGHT = 1 / 16;
/** Offset of the overall mean in a row; the count's (latency, time) pairs come before it. */
const OVERALL = 2 * IN_FLIGHT_BUCKETS;
/** Offset of the completions seen in a row. */
const OBSERVED = OVERALL + 1;
const STRIDE = OBSERVED + 1;

export class InFlightLatency {
  readonly #maxAgeMs: number;
  #table: Float64Array;

  /** `maxAgeMs`: a count's history older than this is not read; `rows`: servers to make room for. */
  constructor(maxAgeMs: number, rows = 1) {
    this.#maxAgeMs = maxAgeMs;
    this.#table = new Float64Array(Math.max(1, rows) * STRIDE);
    for (let r = 0; r < Math.max(1, rows); r++) this.clear(r);
  }

  /** The bucket of `inFlight` requests. */
  static bucket(inFlight: number): number {
    return inFlight >= IN_FLIGHT_BUCKETS - 1 ? IN_FLIGHT_BUCKETS - 1 : inFlight < 0 ? 0 : inFlight | 0;
  }

  /** Rows there is room for. */
  get rows(): number {
    return this.#table.length / STRIDE;
  }

  /** Makes room for row `row` (doubling), new rows without history. */
  ensure(row: number): void {
    const before = this.rows;
    if (row < before) return;
    const rows = Math.max(row + 1, 2 * before);
    const next = new Float64Array(rows * STRIDE);
    next.set(this.#table);
    this.#table = next;
    for (let r = before; r < rows; r++) this.clear(r);
  }

  /** Forgets row `row`'s history (a new server in a reused row). */
  clear(row: number): void {
    const t = this.#table;
    const at = row * STRIDE;
    for (let k = 0; k < IN_FLIGHT_BUCKETS; k++) {
      t[at + 2 * k] = 0;
      t[at + 2 * k + 1] = Number.NEGATIVE_INFINITY;
    }
    t[at + OVERALL] = Number.NaN;
    t[at + OBSERVED] = 0;
  }

  /**
   * Server `row` completed, at `nowMs`, a request that took `latencyMs` and arrived with
   * `arrivedInFlight` others in flight.
   */
  observe(row: number, arrivedInFlight: number, latencyMs: number, nowMs: number): void {
    const t = this.#table;
    const at = row * STRIDE;
    const b = at + 2 * InFlightLatency.bucket(arrivedInFlight);
    const before = t[b] as number;
    t[b] = nowMs - (t[b + 1] as number) <= this.#maxAgeMs ? before + (latencyMs - before) * BUCKET_WEIGHT : latencyMs;
    t[b + 1] = nowMs;
    const overall = t[at + OVERALL] as number;
    t[at + OVERALL] = t[at + OBSERVED] === 0 ? latencyMs : overall + (latencyMs - overall) * OVERALL_WEIGHT;
    t[at + OBSERVED] = (t[at + OBSERVED] as number) + 1;
  }

  /**
   * Server `row`'s estimate (ms) for a request arriving with `inFlight` others in flight at
   * `nowMs`; NaN (unknown) before its first completion.
   */
  estimate(row: number, inFlight: number, nowMs: number): number {
    const t = this.#table;
    const base = row * STRIDE;
    const at = InFlightLatency.bucket(inFlight);
    const oldest = nowMs - this.#maxAgeMs;
    for (let k = at; k >= 0; k--) if ((t[base + 2 * k + 1] as number) >= oldest) return t[base + 2 * k] as number;
    for (let k = at + 1; k < IN_FLIGHT_BUCKETS; k++) {
      if ((t[base + 2 * k + 1] as number) >= oldest) return t[base + 2 * k] as number;
    }
    return t[base + OVERALL] as number;
  }

  /** Completions server `row` has seen (0: it knows nothing of its latency yet). */
  observed(row: number): number {
    return this.#table[row * STRIDE + OBSERVED] as number;
  }
}
