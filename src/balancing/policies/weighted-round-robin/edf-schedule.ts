/**
 * Earliest-deadline-first scheduling of weighted endpoints, as Envoy's weighted round robin:
 * endpoint i is due every `1 / weight_i` units of virtual time; each pick takes the endpoint
 * due first (ties: lower index) and moves its deadline one period on. Over any stretch of
 * virtual time each endpoint is picked its weight's share ±1, its turns evenly spaced, and
 * with well-spread initial phases the endpoints interleave (5:1:1 gives a a b a a c a, not
 * a a a a a b c).
 *
 * Equal weights (the common case: weights unset) with first deadlines within one period need
 * no heap: every endpoint moves one period on, behind all others, so the schedule is a fixed
 * rotation in order of first deadline — O(1) per pick. Otherwise a binary min-heap keeps a pick O(log n) and
 * allocation-free. Each heap slot holds its
 * deadline beside its endpoint index (parallel typed arrays), so a sift reads contiguous
 * memory instead of chasing indices, and the re-inserted top sinks bottom-up (Floyd): the
 * hole goes down to a leaf along the earlier child, then the item climbs back — one compare
 * per level on the way down, and a moved-on deadline usually belongs near the bottom.
 */

export class EdfSchedule {
  readonly keys: readonly string[];
  readonly weights: Float64Array;
  /** [virtual time of the latest pick]: a typed slot, so storing a float never boxes one. */
  readonly #time = new Float64Array(1);
  readonly #period: Float64Array;
  /** Heap slot → deadline. */
  readonly #due: Float64Array;
  /** Heap slot → endpoint index. */
  readonly #index: Int32Array;
  /**
   * Equal weights: `#due`/`#index` hold the rotation in due order instead of a heap, and
   * `#next` is the position due next; positions before it are already one period on.
   */
  readonly #rotating: boolean;
  #next = 0;

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
    this.#due = new Float64Array(n);
    this.#index = new Int32Array(n);
    // A rotation is exact when every first deadline lies within one period of the earliest:
    // then each moved-on deadline falls behind all others.
    let first = Number.POSITIVE_INFINITY;
    let last = Number.NEGATIVE_INFINITY;
    for (const d of deadlines) {
      first = Math.min(first, d);
      last = Math.max(last, d);
    }
    this.#rotating = weights.every((w) => w === weights[0]) && last - first < (this.#period[0] ?? 0);
    if (this.#rotating) {
      // The rotation: endpoints in (deadline, index) order.
      const order = Array.from({ length: n }, (_, i) => i).sort(
        (a, b) => (deadlines[a] as number) - (deadlines[b] as number) || a - b,
      );
      for (let k = 0; k < n; k++) {
        this.#index[k] = order[k] as number;
        this.#due[k] = deadlines[order[k] as number] as number;
      }
    } else {
      // The heap: insert one by one (sift up), O(n log n) once per build.
      for (let slot = 0; slot < n; slot++) this.#siftUp(slot, deadlines[slot] as number, slot);
    }
  }

  /** Virtual time of the latest pick. */
  get time(): number {
    return this.#time[0] as number;
  }

  get size(): number {
    return this.keys.length;
  }

  /** Time until each endpoint is due again, relative to the latest pick (>= 0), by endpoint index. */
  remainingAll(): Float64Array {
    const out = new Float64Array(this.keys.length);
    for (let slot = 0; slot < out.length; slot++) {
      out[this.#index[slot] as number] = Math.max(0, (this.#due[slot] as number) - (this.#time[0] as number));
    }
    return out;
  }

  /** The index of the endpoint due first; advances its deadline by one period. */
  pick(): number {
    const due = this.#due;
    const index = this.#index;
    const n = due.length;
    if (this.#rotating) {
      const k = this.#next;
      const item = index[k] as number;
      const now = due[k] as number;
      this.#time[0] = now;
      due[k] = now + (this.#period[item] as number);
      this.#next = k + 1 === n ? 0 : k + 1;
      return item;
    }
    const top = index[0] as number;
    const now = due[0] as number;
    this.#time[0] = now;
    const key = now + (this.#period[top] as number);
    // Bottom-up: move the earlier child up until the hole reaches a leaf...
    let hole = 0;
    for (;;) {
      let child = 2 * hole + 1;
      if (child >= n) break;
      const right = child + 1;
      if (right < n) {
        const dr = due[right] as number;
        const dc = due[child] as number;
        if (dr < dc || (dr === dc && (index[right] as number) < (index[child] as number))) child = right;
      }
      due[hole] = due[child] as number;
      index[hole] = index[child] as number;
      hole = child;
    }
    // ...then put the moved-on item in the hole and let it climb to its place. (Inline, not
    // #siftUp: a float argument to a call that is not inlined would be boxed on the heap.)
    while (hole > 0) {
      const parent = (hole - 1) >> 1;
      const dp = due[parent] as number;
      if (dp < key || (dp === key && (index[parent] as number) < top)) break;
      due[hole] = dp;
      index[hole] = index[parent] as number;
      hole = parent;
    }
    due[hole] = key;
    index[hole] = top;
    return top;
  }

  #siftUp(start: number, key: number, item: number): void {
    const due = this.#due;
    const index = this.#index;
    let slot = start;
    while (slot > 0) {
      const parent = (slot - 1) >> 1;
      const dp = due[parent] as number;
      if (dp < key || (dp === key && (index[parent] as number) < item)) break;
      due[slot] = dp;
      index[slot] = index[parent] as number;
      slot = parent;
    }
    due[slot] = key;
    index[slot] = item;
  }
}
