/**
 * The hot/cold line of `prequal`: a quantile of the requests-in-flight values in the latest
 * probe answers (a ring of the last `size`). A candidate whose in-flight count is above the
 * line is hot. The line is recomputed after every `recomputeEvery` new values (by selection
 * on a scratch copy, O(size), no allocation), not on every pick, so reading it is free. With no
 * value yet the line is +∞: every candidate is cold.
 */
export class RifQuantile {
  readonly quantile: number;
  readonly #values: Float64Array;
  readonly #scratch: Float64Array;
  readonly #recomputeEvery: number;
  #count = 0;
  #next = 0;
  #fresh = 0;
  #threshold = Number.POSITIVE_INFINITY;

  constructor(quantile: number, size = 64, recomputeEvery = 8) {
    this.quantile = quantile;
    this.#values = new Float64Array(size);
    this.#scratch = new Float64Array(size);
    this.#recomputeEvery = recomputeEvery;
  }

  /** The current line: values above it are hot. */
  get threshold(): number {
    return this.#threshold;
  }

  /** Records one answer's in-flight count. */
  add(rif: number): void {
    this.#values[this.#next] = rif;
    this.#next = this.#next + 1 === this.#values.length ? 0 : this.#next + 1;
    if (this.#count < this.#values.length) this.#count++;
    if (++this.#fresh >= this.#recomputeEvery || this.#count < this.#recomputeEvery) {
      this.#fresh = 0;
      this.#recompute();
    }
  }

  /** The nearest-rank quantile of the recorded values: the k-th smallest, k = ⌈q·count⌉. */
  #recompute(): void {
    const n = this.#count;
    const a = this.#scratch;
    for (let i = 0; i < n; i++) a[i] = this.#values[i] as number;
    const k = Math.min(n - 1, Math.max(0, Math.ceil(this.quantile * n) - 1));
    // Hoare's selection: narrow [lo, hi] around position k.
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const pivot = a[(lo + hi) >> 1] as number;
      let i = lo;
      let j = hi;
      while (i <= j) {
        while ((a[i] as number) < pivot) i++;
        while ((a[j] as number) > pivot) j--;
        if (i <= j) {
          const t = a[i] as number;
          a[i] = a[j] as number;
          a[j] = t;
          i++;
          j--;
        }
      }
      if (k <= j) hi = j;
      else if (k >= i) lo = i;
      else break;
    }
    this.#threshold = a[k] as number;
  }
}
