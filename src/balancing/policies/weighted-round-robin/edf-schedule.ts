/**
 * Earliest-deadline-first scheduling of weighted endpoints, as Envoy's weighted round robin:
 * endpoint i is due every `1 / weight_i` units of virtual time; each pick takes the endpoint
 * due first (ties: lower index) and moves its deadline one period on. Over any stretch of
 * virtual time each endpoint is picked its weight's share ±1, its turns evenly spaced, and
 * with well-spread initial phases the endpoints interleave (5:1:1 gives a a b a a c a, not
 * a a a a a b c). A binary min-heap in typed arrays keeps a pick O(log n) and allocation-free.
 */

export class EdfSchedule {
  readonly keys: readonly string[];
  readonly weights: Float64Array;
  /** Virtual time of the latest pick. */
  time = 0;
  readonly #period: Float64Array;
  readonly #deadline: Float64Array;
  readonly #heap: Int32Array;

  /**
   * @param deadlines each endpoint's first due time (virtual time starts at 0), e.g. a random
   *   fraction of its period so that clients do not march in step.
   */
  constructor(keys: readonly string[], weights: Float64Array, deadlines: Float64Array) {
    const n = keys.length;
    this.keys = keys;
    this.weights = weights;
    this.#period = new Float64Array(n);
    for (let i = 0; i < n; i++) this.#period[i] = 1 / (weights[i] as number);
    this.#deadline = deadlines;
    this.#heap = new Int32Array(n);
    for (let i = 0; i < n; i++) this.#heap[i] = i;
    for (let i = (n >> 1) - 1; i >= 0; i--) this.#siftDown(i);
  }

  get size(): number {
    return this.keys.length;
  }

  /** Time until endpoint `i` is due again, relative to the latest pick (>= 0). */
  remaining(i: number): number {
    return Math.max(0, (this.#deadline[i] as number) - this.time);
  }

  /** The index of the endpoint due first; advances its deadline by one period. */
  pick(): number {
    const heap = this.#heap;
    const top = heap[0] as number;
    const due = this.#deadline[top] as number;
    this.time = due;
    this.#deadline[top] = due + (this.#period[top] as number);
    this.#siftDown(0);
    return top;
  }

  #siftDown(start: number): void {
    const heap = this.#heap;
    const d = this.#deadline;
    const n = heap.length;
    let i = start;
    const item = heap[i] as number;
    const key = d[item] as number;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      let c = heap[child] as number;
      let cKey = d[c] as number;
      const right = child + 1;
      if (right < n) {
        const r = heap[right] as number;
        const rKey = d[r] as number;
        if (rKey < cKey || (rKey === cKey && r < c)) {
          child = right;
          c = r;
          cKey = rKey;
        }
      }
      if (key < cKey || (key === cKey && item < c)) break;
      heap[i] = c;
      i = child;
    }
    heap[i] = item;
  }
}
