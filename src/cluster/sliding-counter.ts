/**
 * A count over a sliding time window, in a ring of buckets: `add()` is O(1) and allocation
 * free, `sum()` covers the last `bucketCount` buckets (between `bucketCount - 1` and
 * `bucketCount` bucket lengths of time). The caller passes the bucket number ("epoch",
 * `floor(clockMs / bucketMs)`), so the counter never reads time itself.
 */
export class SlidingCounter {
  readonly #buckets: Float64Array;
  #epoch = Number.NEGATIVE_INFINITY;

  constructor(bucketCount = 10) {
    this.#buckets = new Float64Array(bucketCount);
  }

  add(epoch: number, n = 1): void {
    if (epoch !== this.#epoch) this.#advance(epoch);
    const b = this.#buckets;
    b[epoch % b.length] = (b[epoch % b.length] ?? 0) + n;
  }

  /** The total over the window ending at `epoch`. */
  sum(epoch: number): number {
    if (epoch > this.#epoch) this.#advance(epoch);
    let total = 0;
    for (const v of this.#buckets) total += v;
    return total;
  }

  #advance(epoch: number): void {
    const b = this.#buckets;
    const gap = epoch - this.#epoch;
    if (gap < 0) return; // time never runs backwards on a Clock; ignore a stale epoch.
    if (gap >= b.length) b.fill(0);
    else for (let i = 1; i <= gap; i++) b[(this.#epoch + i) % b.length] = 0;
    this.#epoch = epoch;
  }
}
