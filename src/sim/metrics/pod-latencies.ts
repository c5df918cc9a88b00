/**
 * Every pod's latency histogram in one store: bucket counts in one contiguous `Uint32Array`
 * (a row of `LatencyHistogram.bucketCount(growth)` per pod index) and each pod's sum and
 * maximum in one `Float64Array`, so recording a request's latency touches two places in
 * memory instead of a histogram object, its array and its boxed totals per pod — ten
 * thousand pods' histograms no longer fit in cache as objects. Buckets, sums and maxima are
 * exactly those of a `LatencyHistogram` fed the same values in the same order, so
 * `histogram(pod)` reports the same quantiles, mean and maximum.
 */
import { LatencyHistogram } from './latency-histogram.js';

/** Per pod in `#totals`: sum of latencies, maximum latency (ms). */
const TOTAL_STRIDE = 2;

export class PodLatencies {
  readonly growth: number;
  readonly #logGrowth: number;
  readonly #buckets: number;
  #counts: Uint32Array;
  #totals: Float64Array;
  #capacity: number;

  /** `growth`: bucket growth, as for `LatencyHistogram`; `pods`: initial capacity (grows). */
  constructor(growth: number, pods = 64) {
    this.growth = growth;
    this.#logGrowth = Math.log(growth);
    this.#buckets = LatencyHistogram.bucketCount(growth);
    this.#capacity = Math.max(1, pods);
    this.#counts = new Uint32Array(this.#capacity * this.#buckets);
    this.#totals = new Float64Array(this.#capacity * TOTAL_STRIDE);
  }

  /** Records latency `ms` of pod `pod`, given `logScaled = Math.log(ms / LatencyHistogram.MIN_MS)`. */
  record(pod: number, ms: number, logScaled: number): void {
    if (pod >= this.#capacity) this.#grow(pod + 1);
    const b = pod * this.#buckets + LatencyHistogram.bucketOf(ms, logScaled, this.#logGrowth, this.#buckets);
    this.#counts[b] = (this.#counts[b] as number) + 1;
    const t = pod * TOTAL_STRIDE;
    const totals = this.#totals;
    totals[t] = (totals[t] as number) + ms;
    if (ms > (totals[t + 1] as number)) totals[t + 1] = ms;
  }

  /** Pod `pod`'s latencies as a `LatencyHistogram` (a copy). */
  histogram(pod: number): LatencyHistogram {
    if (pod >= this.#capacity) return new LatencyHistogram(this.growth);
    const from = pod * this.#buckets;
    const t = pod * TOTAL_STRIDE;
    return LatencyHistogram.fromCounts(
      this.growth,
      this.#counts.subarray(from, from + this.#buckets),
      this.#totals[t] as number,
      this.#totals[t + 1] as number,
    );
  }

  #grow(pods: number): void {
    let cap = this.#capacity;
    while (cap < pods) cap *= 2;
    const counts = new Uint32Array(cap * this.#buckets);
    counts.set(this.#counts);
    this.#counts = counts;
    const totals = new Float64Array(cap * TOTAL_STRIDE);
    totals.set(this.#totals);
    this.#totals = totals;
    this.#capacity = cap;
  }
}
