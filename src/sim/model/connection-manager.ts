/**
 * Connections for the dataplanes that have them (kube-proxy modes, the apiserver's legacy
 * pool): opening, the deadlines that retire them, and closing. Whether a connection may carry
 * another request — and when it must be retired — is decided by the shared `LifetimePolicy`,
 * once for the client (reconnect after N requests or an age) and once for the server (the
 * recycler's limits). A retired connection takes no new request and closes once its
 * in-flight requests have finished; the router that owns it is told at both moments.
 * Connections are ids into `ConnectionRecords` (typed arrays), recycled through a free list.
 */

import type { Random } from '../../core/random.js';
import type { ConnectionLife, LifetimePolicy } from '../../pool/lifetime-policy.js';
import type { Scheduler } from '../engine/scheduler.js';
import type { Sampler } from '../workload/distribution.js';
import {
  CLOSED,
  CLOSING,
  type ConnectionHandle,
  ConnectionRecords,
  HOT_STRIDE,
  IDLE_SINCE,
  IN_FLIGHT,
  MAX_AGE,
  OPEN,
  OPENED_AT,
  POD,
  REQUESTS,
  SERVER_MAX_AGE,
  STATE,
  TIME_STRIDE,
} from './connection-records.js';
import type { SimClient } from './sim-client.js';
import type { SimPod } from './sim-pod.js';

/** The router's hooks; `id` is a connection id. */
export interface ConnectionOwner {
  /** Connection `id` stopped taking new requests (it may still be finishing some). */
  retired(id: number): void;
  /** Connection `id` is closed. */
  closed(id: number): void;
}

export interface ConnectionManagerInit {
  readonly scheduler: Scheduler;
  /** The simulation's pods, by index (connections count themselves on their pod). */
  readonly pods: readonly SimPod[];
  readonly clientPolicy: LifetimePolicy;
  readonly serverPolicy: LifetimePolicy;
  /** Session lengths after which the client closes a connection by itself; undefined = never. */
  readonly sessions: Sampler | undefined;
  /** Randomness for session lengths and initial ages. */
  readonly random: Random;
}

/** What the lifetime policies read of one connection, filled from its record before asking. */
interface LifeView {
  openedAtMs: number;
  maxAgeMs: number | undefined;
  requests: number;
  inFlight: number;
  idleSinceMs: number;
}

export class ConnectionManager {
  readonly clientPolicy: LifetimePolicy;
  readonly serverPolicy: LifetimePolicy;
  readonly #scheduler: Scheduler;
  readonly #pods: readonly SimPod[];
  readonly #sessions: Sampler | undefined;
  readonly #random: Random;
  readonly #deadlineKind: number;
  readonly #records = new ConnectionRecords();
  readonly #free: number[] = [];
  readonly #life: LifeView = { openedAtMs: 0, maxAgeMs: undefined, requests: 0, inFlight: 0, idleSinceMs: 0 };
  #owner: ConnectionOwner | undefined;
  #opened = 0;
  #openedInWindow = 0;
  #windowFromMs = Number.POSITIVE_INFINITY;
  #windowToMs = Number.POSITIVE_INFINITY;
  /** Whether the policies can say anything per request (skipped on the hot path when not). */
  readonly #clientLimits: boolean;
  readonly #serverIdleLimit: boolean;
  readonly #requestLimits: boolean;
  /** Whether any policy reads when a connection became idle (else the hot path need not write it). */
  readonly #idleRead: boolean;

  constructor(init: ConnectionManagerInit) {
    this.#scheduler = init.scheduler;
    this.#pods = init.pods;
    this.clientPolicy = init.clientPolicy;
    this.serverPolicy = init.serverPolicy;
    this.#sessions = init.sessions;
    this.#random = init.random;
    this.#deadlineKind = init.scheduler.register((id, generation) => this.#deadline(id, generation));
    this.#clientLimits = !init.clientPolicy.unlimited;
    this.#serverIdleLimit = init.serverPolicy.options.idleTimeoutMs !== undefined;
    this.#requestLimits =
      init.clientPolicy.options.maxRequestsPerConnection !== undefined ||
      init.serverPolicy.options.maxRequestsPerConnection !== undefined;
    this.#idleRead = init.clientPolicy.options.idleTimeoutMs !== undefined || this.#serverIdleLimit;
  }

  /** Connections opened, ever. */
  get opened(): number {
    return this.#opened;
  }

  /** Connections dialled inside the measured window (reconnects: the initial dials come before it). */
  get openedInWindow(): number {
    return this.#openedInWindow;
  }

  /** The measured window, for `openedInWindow` (end = Infinity until known). */
  setWindow(fromMs: number, toMs: number): void {
    this.#windowFromMs = fromMs;
    this.#windowToMs = toMs;
  }

  setOwner(owner: ConnectionOwner): void {
    this.#owner = owner;
  }

  /** Whether connection `id` takes new requests. */
  isOpen(id: number): boolean {
    return this.#records.hot[id * HOT_STRIDE + STATE] === OPEN;
  }

  /** The index of the pod connection `id` goes to. */
  podOf(id: number): number {
    return this.#records.hot[id * HOT_STRIDE + POD] as number;
  }

  /** The index of the client that opened connection `id`. */
  clientOf(id: number): number {
    return this.#records.client[id] as number;
  }

  /** Connection `id` as an object with its live counters (fair-share metering). */
  handle(id: number): ConnectionHandle {
    return this.#records.handle(id);
  }

  /**
   * Opens a connection from `client` to `pod`; returns its id. `staggered` gives it a random
   * age already (uniform over its first limit), as connections have in a cluster that has run
   * for a while.
   */
  open(client: SimClient, pod: SimPod, staggered: boolean): number {
    const r = this.#records;
    const id = this.#free.pop() ?? r.add();
    const now = this.#scheduler.now;
    r.generation[id] = (r.generation[id] as number) + 1;
    r.client[id] = client.index;
    const h = id * HOT_STRIDE;
    r.hot[h + STATE] = OPEN;
    r.hot[h + POD] = pod.index;
    r.hot[h + IN_FLIGHT] = 0;
    r.hot[h + REQUESTS] = 0;
    const maxAgeMs = this.clientPolicy.drawMaxAgeMs();
    const serverMaxAgeMs = this.serverPolicy.drawMaxAgeMs();
    const session = this.#sessions === undefined ? Number.POSITIVE_INFINITY : this.#sessions.sample(this.#random);
    let openedAt = now;
    let sessionEndMs: number;
    if (staggered) {
      const first = Math.min(maxAgeMs ?? Number.POSITIVE_INFINITY, serverMaxAgeMs ?? Number.POSITIVE_INFINITY);
      const u = this.#random.next();
      if (Number.isFinite(first)) openedAt = now - u * first;
      sessionEndMs = now + u * session;
    } else {
      sessionEndMs = now + session;
    }
    const t = id * TIME_STRIDE;
    r.times[t + OPENED_AT] = openedAt;
    r.times[t + IDLE_SINCE] = now;
    r.times[t + MAX_AGE] = maxAgeMs ?? Number.NaN;
    r.times[t + SERVER_MAX_AGE] = serverMaxAgeMs ?? Number.NaN;
    pod.openConnections++;
    this.#opened++;
    if (!staggered && now >= this.#windowFromMs && now < this.#windowToMs) this.#openedInWindow++;
    const deadline = Math.min(
      maxAgeMs === undefined ? Number.POSITIVE_INFINITY : openedAt + maxAgeMs,
      serverMaxAgeMs === undefined ? Number.POSITIVE_INFINITY : openedAt + serverMaxAgeMs,
      sessionEndMs,
    );
    if (Number.isFinite(deadline)) this.#scheduler.at(deadline, this.#deadlineKind, id, r.generation[id] as number);
    return id;
  }

  /**
   * May connection `id` take a request now? Retires it (and returns false) when the client's
   * or the server's lifetime policy says so.
   */
  usable(id: number): boolean {
    const hot = this.#records.hot;
    const h = id * HOT_STRIDE;
    if (hot[h + STATE] !== OPEN) return false;
    if (!this.#clientLimits && !this.#serverIdleLimit) return true;
    const now = this.#scheduler.now;
    const life = this.#lifeOf(id);
    if (!this.#clientLimits || this.clientPolicy.canCarryAnother(life, now).type === 'open') {
      // The server closes idle connections past its idle timeout (e.g. Node's keepAliveTimeout).
      if (life.inFlight > 0 || !this.#serverIdleLimit || this.serverPolicy.idleVerdict(life, now).type === 'open') {
        return true;
      }
    }
    this.retire(id);
    return false;
  }

  /** Records a request starting on connection `id`; retires it if this is its last request on either side. */
  startRequest(id: number): void {
    const hot = this.#records.hot;
    const h = id * HOT_STRIDE;
    const requests = (hot[h + REQUESTS] as number) + 1;
    hot[h + REQUESTS] = requests;
    hot[h + IN_FLIGHT] = (hot[h + IN_FLIGHT] as number) + 1;
    if (!this.#requestLimits) return;
    if (this.clientPolicy.isLastRequest(requests) || this.serverPolicy.isLastRequest(requests)) this.retire(id);
  }

  /** Records a request ending on connection `id`; closes a retired connection once it is idle. */
  endRequest(id: number): void {
    const hot = this.#records.hot;
    const h = id * HOT_STRIDE;
    const inFlight = (hot[h + IN_FLIGHT] as number) - 1;
    hot[h + IN_FLIGHT] = inFlight;
    if (inFlight > 0) return;
    if (this.#idleRead) this.#records.times[id * TIME_STRIDE + IDLE_SINCE] = this.#scheduler.now;
    const state = hot[h + STATE];
    if (state === CLOSING) this.#close(id);
    else if (state === CLOSED) this.#release(id);
  }

  /** Stops new requests on connection `id`; it closes when idle. */
  retire(id: number): void {
    const hot = this.#records.hot;
    const h = id * HOT_STRIDE;
    if (hot[h + STATE] !== OPEN) return;
    hot[h + STATE] = CLOSING;
    this.#owner?.retired(id);
    if (hot[h + IN_FLIGHT] === 0) this.#close(id);
  }

  /** Closes connection `id` now (its pod went away); requests in flight still finish on the pod. */
  abort(id: number): void {
    const hot = this.#records.hot;
    const h = id * HOT_STRIDE;
    if (hot[h + STATE] === CLOSED) return;
    if (hot[h + STATE] === OPEN) {
      hot[h + STATE] = CLOSING;
      this.#owner?.retired(id);
    }
    this.#close(id);
  }

  /** Every connection not yet closed to `pod`, by id. */
  openTo(pod: SimPod): number[] {
    const hot = this.#records.hot;
    const ids: number[] = [];
    for (let id = 0, n = this.#records.size; id < n; id++) {
      const h = id * HOT_STRIDE;
      if (hot[h + STATE] !== CLOSED && hot[h + POD] === pod.index) ids.push(id);
    }
    return ids;
  }

  #lifeOf(id: number): ConnectionLife {
    const r = this.#records;
    const h = id * HOT_STRIDE;
    const t = id * TIME_STRIDE;
    const life = this.#life;
    const maxAge = r.times[t + MAX_AGE] as number;
    life.openedAtMs = r.times[t + OPENED_AT] as number;
    life.maxAgeMs = Number.isNaN(maxAge) ? undefined : maxAge;
    life.requests = r.hot[h + REQUESTS] as number;
    life.inFlight = r.hot[h + IN_FLIGHT] as number;
    life.idleSinceMs = r.times[t + IDLE_SINCE] as number;
    return life;
  }

  #close(id: number): void {
    const r = this.#records;
    const h = id * HOT_STRIDE;
    r.hot[h + STATE] = CLOSED;
    r.generation[id] = (r.generation[id] as number) + 1;
    (this.#pods[r.hot[h + POD] as number] as SimPod).openConnections--;
    this.#owner?.closed(id);
    if (r.hot[h + IN_FLIGHT] === 0) this.#release(id);
  }

  #release(id: number): void {
    this.#free.push(id);
  }

  #deadline(id: number, generation: number): void {
    if (id >= this.#records.size || this.#records.generation[id] !== generation) return;
    this.retire(id);
  }
}
