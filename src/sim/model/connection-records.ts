/**
 * The simulated TCP connections, as records in typed arrays indexed by connection id (a
 * million connections must not be a million objects: each request reads its connection, and
 * objects that no longer fit in cache made that first read the simulator's costliest line).
 * What a request touches — state, pod, requests in flight, requests carried — is one 16-byte
 * record in `hot`, so it costs one cache line; times and the rest are kept apart and read
 * only when a lifetime limit or a close needs them. `open` connections take new requests; a
 * `closing` one finishes what it carries and then closes; `closed` is final. `generation`
 * changes whenever an id is reused, so stale deadline events are ignored.
 */
import type { MeteredConnection } from '../../balancing/fair-share/load-meter.js';

/** `state` of a connection id that is free or closed (typed arrays start at 0). */
export const CLOSED = 0;
/** `state`: takes new requests. */
export const OPEN = 1;
/** `state`: takes no new request, closes once idle. */
export const CLOSING = 2;

/** Int32 fields of one record in `hot`. */
export const HOT_STRIDE = 4;
export const STATE = 0;
export const POD = 1;
export const IN_FLIGHT = 2;
export const REQUESTS = 3;

/** Float64 fields of one record in `times` (NaN = no limit). */
export const TIME_STRIDE = 4;
export const OPENED_AT = 0;
export const IDLE_SINCE = 1;
export const MAX_AGE = 2;
export const SERVER_MAX_AGE = 3;

const INITIAL_CAPACITY = 1024;

export class ConnectionRecords {
  /** Per id, `HOT_STRIDE` int32s: STATE, POD (index), IN_FLIGHT, REQUESTS. */
  hot = new Int32Array(INITIAL_CAPACITY * HOT_STRIDE);
  /** Per id, `TIME_STRIDE` float64s: OPENED_AT, IDLE_SINCE (when it last became idle), MAX_AGE, SERVER_MAX_AGE. */
  times = new Float64Array(INITIAL_CAPACITY * TIME_STRIDE);
  /** Per id, the client's index. */
  client = new Int32Array(INITIAL_CAPACITY);
  /** Per id, bumped on open and on close. */
  generation = new Int32Array(INITIAL_CAPACITY);
  #capacity = INITIAL_CAPACITY;
  /** Ids handed out so far (every id below is a record). */
  #used = 0;
  #handles: (ConnectionHandle | undefined)[] = [];

  /** Ids ever handed out. */
  get size(): number {
    return this.#used;
  }

  /** A never-used id (the caller reuses released ids first). */
  add(): number {
    if (this.#used === this.#capacity) this.#grow();
    return this.#used++;
  }

  /**
   * One object per id, the same for every connection that id carries, as the fair-share
   * `LoadMeter` keys its per-connection state by object (it detects reuse by the request
   * count going down, as it did when the simulator pooled connection objects by id).
   */
  handle(id: number): ConnectionHandle {
    let h = this.#handles[id];
    if (h === undefined) {
      h = new ConnectionHandle(this, id);
      this.#handles[id] = h;
    }
    return h;
  }

  #grow(): void {
    const cap = this.#capacity * 2;
    const hot = new Int32Array(cap * HOT_STRIDE);
    hot.set(this.hot);
    this.hot = hot;
    const times = new Float64Array(cap * TIME_STRIDE);
    times.set(this.times);
    this.times = times;
    const client = new Int32Array(cap);
    client.set(this.client);
    this.client = client;
    const generation = new Int32Array(cap);
    generation.set(this.generation);
    this.generation = generation;
    this.#capacity = cap;
  }
}

/** A connection id seen as an object: its live counters, for the fair-share load meter. */
export class ConnectionHandle implements MeteredConnection {
  readonly id: number;
  readonly #records: ConnectionRecords;

  constructor(records: ConnectionRecords, id: number) {
    this.#records = records;
    this.id = id;
  }

  get requests(): number {
    return this.#records.hot[this.id * HOT_STRIDE + REQUESTS] as number;
  }

  get inFlight(): number {
    return this.#records.hot[this.id * HOT_STRIDE + IN_FLIGHT] as number;
  }
}
