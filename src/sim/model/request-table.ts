/**
 * The requests in flight in a simulation, as slots in parallel typed arrays: which client
 * sent it, when, which pod and connection carry it, when it reached the pod and (on pods whose
 * speed changes) how much work it still needs, and the load record the balancer started
 * for it (as a balancer number and a record index, so ending it touches only the tracker's
 * arrays). Slots are recycled through a free list, so the per-request path allocates nothing
 * once the table has grown to the run's peak concurrency.
 */

/** `RequestTable.flags` bit: the request belongs to a closed-loop stream (its end starts the next). */
export const CLOSED_LOOP = 1;

export class RequestTable {
  client = new Int32Array(64);
  pod = new Int32Array(64);
  /** Connection id, or -1 when the request is not on a modelled connection. */
  conn = new Int32Array(64);
  sentMs = new Float64Array(64);
  /** Bit flags: `CLOSED_LOOP` = the request belongs to a closed-loop stream. */
  flags = new Int32Array(64);
  /** What `EndpointLoad.start()` returned (evenlb dataplanes). */
  loadStartMs = new Float64Array(64);
  /** When the request reached its pod (`deliver`), ms. */
  arrivedMs = new Float64Array(64);
  /** Requests at its pod (in service and queued) when it arrived, itself not counted. */
  arrivedInFlight = new Int32Array(64);
  /** Pods whose speed changes: the pod's work clock reading at which the request is done. */
  workTarget = new Float64Array(64);
  /**
   * Pods whose speed changes: the generation of the request's pending completion event (a
   * reschedule or the completion itself bumps it, so an older event is recognised as stale).
   * Never reset, so a recycled slot's generations keep increasing.
   */
  serviceGen = new Int32Array(64);
  /** Pods whose speed changes: the request's place in its pod's list of requests in service. */
  servicePos = new Int32Array(64);
  /** Which balancer started a load record for the request (evenlb dataplanes), or -1. */
  loadOwner = new Int32Array(64);
  /** The index of that record in the balancer's `LoadTracker`. */
  loadIndex = new Int32Array(64);
  #free: number[] = [];
  #capacity = 64;
  #used = 0;
  #live = 0;

  /** Requests allocated and not yet released. */
  get live(): number {
    return this.#live;
  }

  /** A fresh slot for a request sent by `client` at `nowMs`. */
  alloc(client: number, nowMs: number, flags: number): number {
    let slot = this.#free.pop();
    if (slot === undefined) {
      if (this.#used === this.#capacity) this.#grow();
      slot = this.#used++;
    }
    this.client[slot] = client;
    this.pod[slot] = -1;
    this.conn[slot] = -1;
    this.sentMs[slot] = nowMs;
    this.flags[slot] = flags;
    this.loadOwner[slot] = -1;
    this.#live++;
    return slot;
  }

  release(slot: number): void {
    this.#free.push(slot);
    this.#live--;
  }

  #grow(): void {
    const cap = this.#capacity * 2;
    const i32 = (old: Int32Array): Int32Array<ArrayBuffer> => {
      const next = new Int32Array(cap);
      next.set(old);
      return next;
    };
    const f64 = (old: Float64Array): Float64Array<ArrayBuffer> => {
      const next = new Float64Array(cap);
      next.set(old);
      return next;
    };
    this.client = i32(this.client);
    this.pod = i32(this.pod);
    this.conn = i32(this.conn);
    this.flags = i32(this.flags);
    this.loadOwner = i32(this.loadOwner);
    this.loadIndex = i32(this.loadIndex);
    this.serviceGen = i32(this.serviceGen);
    this.servicePos = i32(this.servicePos);
    this.sentMs = f64(this.sentMs);
    this.arrivedMs = f64(this.arrivedMs);
    this.arrivedInFlight = i32(this.arrivedInFlight);
    this.workTarget = f64(this.workTarget);
    this.loadStartMs = f64(this.loadStartMs);
    this.#capacity = cap;
  }
}
