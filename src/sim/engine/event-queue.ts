/**
 * The simulator's priority queue of events on virtual time: an index-based binary min-heap
 * over parallel typed arrays, ordered by time and then by insertion sequence, so two events
 * due at the same instant run in the order they were scheduled (a stable tie-break that
 * makes every run reproducible). An event is four numbers — time, kind, and two integer
 * arguments — so scheduling allocates nothing once the arrays have grown to the run's peak
 * size; `pop()` leaves the popped event in `kind`, `a` and `b` instead of returning an object.
 */

const INITIAL_CAPACITY = 64;

export class EventQueue {
  #time = new Float64Array(INITIAL_CAPACITY);
  #seq = new Float64Array(INITIAL_CAPACITY);
  #kind = new Int32Array(INITIAL_CAPACITY);
  #a = new Int32Array(INITIAL_CAPACITY);
  #b = new Int32Array(INITIAL_CAPACITY);
  #size = 0;
  #nextSeq = 0;
  /** Time of the event popped last (ms). */
  time = 0;
  /** Kind of the event popped last. */
  kind = 0;
  /** First argument of the event popped last. */
  a = 0;
  /** Second argument of the event popped last. */
  b = 0;

  /** Events waiting. */
  get size(): number {
    return this.#size;
  }

  /** Events ever pushed. */
  get pushed(): number {
    return this.#nextSeq;
  }

  /** Due time of the next event, or `Infinity` when empty. */
  peekTime(): number {
    return this.#size === 0 ? Number.POSITIVE_INFINITY : (this.#time[0] as number);
  }

  /**
   * Schedules an event. `kind`, `a` and `b` are 32-bit integers the caller interprets.
   *
   * @example
   * const q = new EventQueue();
   * q.push(5, 1, 0, 0); q.push(5, 2, 0, 0); q.push(1, 3, 0, 0);
   * q.pop(); q.kind // 3; then 1, then 2 (same time: insertion order)
   */
  push(timeMs: number, kind: number, a: number, b: number): void {
    if (Number.isNaN(timeMs)) throw new RangeError('EventQueue: event time is NaN');
    if (this.#size === this.#time.length) this.#grow();
    const seq = this.#nextSeq++;
    // Sift up with a hole: move parents down until the new event's place is found.
    const time = this.#time;
    const seqs = this.#seq;
    let i = this.#size++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const pt = time[p] as number;
      if (pt < timeMs || (pt === timeMs && (seqs[p] as number) < seq)) break;
      this.#move(p, i);
      i = p;
    }
    time[i] = timeMs;
    seqs[i] = seq;
    this.#kind[i] = kind;
    this.#a[i] = a;
    this.#b[i] = b;
  }

  /** Removes the earliest event into `time`, `kind`, `a`, `b`; false when empty. */
  pop(): boolean {
    const n = this.#size;
    if (n === 0) return false;
    const time = this.#time;
    const seqs = this.#seq;
    this.time = time[0] as number;
    this.kind = this.#kind[0] as number;
    this.a = this.#a[0] as number;
    this.b = this.#b[0] as number;
    const last = n - 1;
    this.#size = last;
    if (last === 0) return true;
    // Sift the last event down from the root.
    const lt = time[last] as number;
    const ls = seqs[last] as number;
    const lk = this.#kind[last] as number;
    const la = this.#a[last] as number;
    const lb = this.#b[last] as number;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= last) break;
      const r = c + 1;
      if (r < last) {
        const ct = time[c] as number;
        const rt = time[r] as number;
        if (rt < ct || (rt === ct && (seqs[r] as number) < (seqs[c] as number))) c = r;
      }
      const ct = time[c] as number;
      if (lt < ct || (lt === ct && ls < (seqs[c] as number))) break;
      this.#move(c, i);
      i = c;
    }
    time[i] = lt;
    seqs[i] = ls;
    this.#kind[i] = lk;
    this.#a[i] = la;
    this.#b[i] = lb;
    return true;
  }

  /** Drops every waiting event (the sequence keeps counting, so order stays stable). */
  clear(): void {
    this.#size = 0;
  }

  #move(from: number, to: number): void {
    this.#time[to] = this.#time[from] as number;
    this.#seq[to] = this.#seq[from] as number;
    this.#kind[to] = this.#kind[from] as number;
    this.#a[to] = this.#a[from] as number;
    this.#b[to] = this.#b[from] as number;
  }

  #grow(): void {
    const cap = this.#time.length * 2;
    const grow = <T extends Float64Array | Int32Array>(old: T, make: (n: number) => T): T => {
      const next = make(cap);
      next.set(old);
      return next;
    };
    this.#time = grow(this.#time, (n) => new Float64Array(n));
    this.#seq = grow(this.#seq, (n) => new Float64Array(n));
    this.#kind = grow(this.#kind, (n) => new Int32Array(n));
    this.#a = grow(this.#a, (n) => new Int32Array(n));
    this.#b = grow(this.#b, (n) => new Int32Array(n));
  }
}
