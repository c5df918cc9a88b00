/**
 * A log-bucketed latency histogram for the simulator: constant memory, O(1) record, quantiles
 * within half a bucket — ±1% at the default 2% bucket growth; per-pod histograms use coarser
 * buckets to stay small (a thousand pods must not cost megabytes of cache). Values from 1 µs
 * to about 11 days fit; smaller ones count in the first bucket, larger in the last.
 * Deterministic: the same values give the same quantiles, whatever the order.
 */

const MIN_MS = 0.001;
const MAX_MS = 1e9;

export class LatencyHistogram {
  /** The lower bound of the first bucket, ms. */
  static readonly MIN_MS = MIN_MS;
  readonly #growth: number;
  readonly #logGrowth: number;
  readonly #buckets: number;
  readonly #counts: Uint32Array;
  #count = 0;
  #sumMs = 0;
  #maxMs = 0;

  /** `growth`: ratio between consecutive bucket bounds (1.02 → quantiles within ±1%). */
  constructor(growth = 1.02) {
    this.#growth = growth;
    this.#logGrowth = Math.log(growth);
    this.#buckets = LatencyHistogram.bucketCount(growth);
    this.#counts = new Uint32Array(this.#buckets);
  }

  /** How many buckets a histogram of bucket growth `growth` has. */
  static bucketCount(growth: number): number {
    return Math.ceil(Math.log(MAX_MS / MIN_MS) / Math.log(growth)) + 1;
  }

  /**
   * The bucket of a latency `ms` given `logScaled = Math.log(ms / MIN_MS)` and
   * `logGrowth = Math.log(growth)`: the index `record` counts it in.
   */
  static bucketOf(ms: number, logScaled: number, logGrowth: number, buckets: number): number {
    const i = ms <= MIN_MS ? 0 : Math.floor(logScaled / logGrowth) + 1;
    return i >= buckets ? buckets - 1 : i;
  }

  /**
   * A histogram holding `counts` (one per bucket, `bucketCount(growth)` of them) whose
   * values summed to `sumMs` with maximum `maxMs` — what recording them one by one would
   * have given (compact stores such as `PodLatencies` hand their rows over this way).
   */
  static fromCounts(growth: number, counts: ArrayLike<number>, sumMs: number, maxMs: number): LatencyHistogram {
    const h = new LatencyHistogram(growth);
    if (counts.length !== h.#buckets) {
      throw new RangeError(`LatencyHistogram: expected ${h.#buckets} bucket counts; received ${counts.length}`);
    }
    let count = 0;
    for (let i = 0; i < h.#buckets; i++) {
      const c = counts[i] as number;
      h.#counts[i] = c;
      count += c;
    }
    h.#count = count;
    h.#sumMs = sumMs;
    h.#maxMs = maxMs;
    return h;
  }

  /** Records one latency in ms. */
  record(ms: number): void {
    this.recordWithLog(ms, Math.log(ms / MIN_MS));
  }

  /**
   * Records one latency given `logScaled = Math.log(ms / LatencyHistogram.MIN_MS)`, so one
   * logarithm serves several histograms (the run's and the pod's) on the hot path.
   */
  recordWithLog(ms: number, logScaled: number): void {
    const i = LatencyHistogram.bucketOf(ms, logScaled, this.#logGrowth, this.#buckets);
    this.#counts[i] = (this.#counts[i] as number) + 1;
    this.#count++;
    this.#sumMs += ms;
    if (ms > this.#maxMs) this.#maxMs = ms;
  }

  /** Adds another histogram's counts into this one (both must have the same growth). */
  merge(other: LatencyHistogram): void {
    if (other.#growth !== this.#growth)
      throw new RangeError('LatencyHistogram: merging histograms of different growth');
    const theirs = other.#counts;
    for (let i = 0; i < this.#buckets; i++) this.#counts[i] = (this.#counts[i] as number) + (theirs[i] as number);
    this.#count += other.#count;
    this.#sumMs += other.#sumMs;
    if (other.#maxMs > this.#maxMs) this.#maxMs = other.#maxMs;
  }

  get count(): number {
    return this.#count;
  }

  /** Mean latency in ms (0 when empty). */
  get meanMs(): number {
    return this.#count === 0 ? 0 : this.#sumMs / this.#count;
  }

  get maxMs(): number {
    return this.#maxMs;
  }

  /**
   * The latency below which a fraction `q` of the values fall (bucket midpoint), or
   * undefined when empty.
   *
   * @example
   * const h = new LatencyHistogram();
   * for (let i = 1; i <= 100; i++) h.record(i);
   * h.quantile(0.99); // ≈ 99
   */
  quantile(q: number): number | undefined {
    if (this.#count === 0) return undefined;
    const rank = Math.max(1, Math.ceil(q * this.#count));
    let seen = 0;
    for (let i = 0; i < this.#buckets; i++) {
      seen += this.#counts[i] as number;
      if (seen >= rank) {
        if (i === 0) return MIN_MS;
        const low = MIN_MS * this.#growth ** (i - 1);
        return Math.min(this.#maxMs, low * Math.sqrt(this.#growth));
      }
    }
    return this.#maxMs;
  }
}
