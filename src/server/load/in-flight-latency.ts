/**
 * A server's latency estimate at a given number of requests in flight, as Prequal's servers
 * make it: an exponentially weighted mean (each request weighing 1/8) of the latencies of
 * completed requests, kept per in-flight count they arrived at (0 … 63, the last counting
 * everything above), read at the count asked — the nearest count at or below it with a recent
 * history, else the nearest above, else the overall mean (1/16). So a server with a queue says
 * it is slow before its completions do, and an idle one says what an idle request costs.
 *
 * A count's history older than `maxAgeMs` is not read (a burst long ago says little about now).
 * Typed arrays sized once; `observe` and `estimate` allocate nothing.
 */

/** In-flight counts with an estimate of their own (the last one counts everything above). */
export const IN_FLIGHT_BUCKETS = 64;
/** Weight of one completed request in its in-flight count's estimate. */
const BUCKET_WEIGHT = 1 / 8;
/** Weight of one completed request in the overall estimate. */
const OVERALL_WEIGHT = 1 / 16;

export class InFlightLatency {
  readonly #latencyMs = new Float64Array(IN_FLIGHT_BUCKETS);
  readonly #stampMs = new Float64Array(IN_FLIGHT_BUCKETS).fill(Number.NEGATIVE_INFINITY);
  readonly #maxAgeMs: number;
  #overallMs = 0;
  #observed = false;

  /** `maxAgeMs`: a count's history older than this is not read. */
  constructor(maxAgeMs: number) {
    this.#maxAgeMs = maxAgeMs;
  }

  /** The bucket of `inFlight` requests. */
  static bucket(inFlight: number): number {
    return inFlight >= IN_FLIGHT_BUCKETS - 1 ? IN_FLIGHT_BUCKETS - 1 : inFlight < 0 ? 0 : inFlight | 0;
  }

  /** A request that arrived with `arrivedInFlight` others in flight took `latencyMs`, completing at `nowMs`. */
  observe(arrivedInFlight: number, latencyMs: number, nowMs: number): void {
    const b = InFlightLatency.bucket(arrivedInFlight);
    const fresh = nowMs - (this.#stampMs[b] as number) <= this.#maxAgeMs;
    const before = this.#latencyMs[b] as number;
    this.#latencyMs[b] = fresh ? before + (latencyMs - before) * BUCKET_WEIGHT : latencyMs;
    this.#stampMs[b] = nowMs;
    this.#overallMs = this.#observed ? this.#overallMs + (latencyMs - this.#overallMs) * OVERALL_WEIGHT : latencyMs;
    this.#observed = true;
  }

  /** The estimate (ms) for a request arriving with `inFlight` others in flight at `nowMs`; 0 before any completion. */
  estimate(inFlight: number, nowMs: number): number {
    const at = InFlightLatency.bucket(inFlight);
    const oldest = nowMs - this.#maxAgeMs;
    for (let k = at; k >= 0; k--) if ((this.#stampMs[k] as number) >= oldest) return this.#latencyMs[k] as number;
    for (let k = at + 1; k < IN_FLIGHT_BUCKETS; k++) {
      if ((this.#stampMs[k] as number) >= oldest) return this.#latencyMs[k] as number;
    }
    return this.#overallMs;
  }
}
