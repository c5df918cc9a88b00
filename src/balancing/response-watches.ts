/**
 * One-shot callbacks on a load record's response count: "tell me once record i has answered
 * n times". A `LoadTracker` keeps one set and checks it after every response while any watch
 * is armed; a `Balancer` arms one per guarded endpoint so that the herding guard lifts at the
 * response that ends it, not at the next weight refresh (up to `weightRefreshMs` later, while
 * the endpoint is still drawn at its lowered weight).
 */

interface Watch {
  readonly atLeast: number;
  readonly listener: () => void;
}

export class ResponseWatches {
  readonly #byIndex = new Map<number, Watch[]>();

  /** Records with an armed watch: 0 keeps the tracker's response path to one comparison. */
  get size(): number {
    return this.#byIndex.size;
  }

  /**
   * Calls `listener` once, at the first `check(index, n)` with n >= `atLeast`; returns a
   * function that disarms it (idempotent, harmless after it fired).
   */
  add(index: number, atLeast: number, listener: () => void): () => void {
    const watch: Watch = { atLeast, listener };
    const list = this.#byIndex.get(index);
    if (list === undefined) this.#byIndex.set(index, [watch]);
    else list.push(watch);
    return () => this.#remove(index, watch);
  }

  /**
   * Record `index` has now answered `responses` times: disarms and then calls the watches that
   * reached their count (a listener may arm or disarm others meanwhile).
   */
  check(index: number, responses: number): void {
    const list = this.#byIndex.get(index);
    if (list === undefined) return;
    const due = list.filter((w) => responses >= w.atLeast);
    if (due.length === 0) return;
    const rest = list.filter((w) => responses < w.atLeast);
    if (rest.length === 0) this.#byIndex.delete(index);
    else this.#byIndex.set(index, rest);
    for (const w of due) w.listener();
  }

  /** Disarms every watch on `index` (its record left the tracker; the index may be reused). */
  clear(index: number): void {
    this.#byIndex.delete(index);
  }

  #remove(index: number, watch: Watch): void {
    const list = this.#byIndex.get(index);
    if (list === undefined) return;
    const rest = list.filter((w) => w !== watch);
    if (rest.length === list.length) return;
    if (rest.length === 0) this.#byIndex.delete(index);
    else this.#byIndex.set(index, rest);
  }
}
