/**
 * Connections for the dataplanes that have them (kube-proxy modes, the apiserver's legacy
 * pool): opening, the deadlines that retire them, and closing. Whether a connection may carry
 * another request — and when it must be retired — is decided by the shared `LifetimePolicy`,
 * once for the client (reconnect after N requests or an age) and once for the server (the
 * recycler's limits). A retired connection takes no new request and closes once its
 * in-flight requests have finished; the router that owns it is told at both moments.
 */

import type { Random } from '../../core/random.js';
import type { LifetimePolicy } from '../../pool/lifetime-policy.js';
import type { Scheduler } from '../engine/scheduler.js';
import type { Sampler } from '../workload/distribution.js';
import type { SimClient } from './sim-client.js';
import { SimConnection } from './sim-connection.js';
import type { SimPod } from './sim-pod.js';

/** The router's hooks. */
export interface ConnectionOwner {
  /** `conn` stopped taking new requests (it may still be finishing some). */
  retired(conn: SimConnection): void;
  /** `conn` is closed. */
  closed(conn: SimConnection): void;
}

export interface ConnectionManagerInit {
  readonly scheduler: Scheduler;
  readonly clientPolicy: LifetimePolicy;
  readonly serverPolicy: LifetimePolicy;
  /** Session lengths after which the client closes a connection by itself; undefined = never. */
  readonly sessions: Sampler | undefined;
  /** Randomness for session lengths and initial ages. */
  readonly random: Random;
}

export class ConnectionManager {
  readonly clientPolicy: LifetimePolicy;
  readonly serverPolicy: LifetimePolicy;
  readonly #scheduler: Scheduler;
  readonly #sessions: Sampler | undefined;
  readonly #random: Random;
  readonly #deadlineKind: number;
  readonly #all: SimConnection[] = [];
  readonly #free: number[] = [];
  #owner: ConnectionOwner | undefined;
  #opened = 0;
  #openedInWindow = 0;
  #windowFromMs = Number.POSITIVE_INFINITY;
  #windowToMs = Number.POSITIVE_INFINITY;
  /** Whether the policies can say anything per request (skipped on the hot path when not). */
  readonly #clientLimits: boolean;
  readonly #serverIdleLimit: boolean;
  readonly #requestLimits: boolean;

  constructor(init: ConnectionManagerInit) {
    this.#scheduler = init.scheduler;
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

  /** The connection with id `id` (request slots record ids). */
  get(id: number): SimConnection {
    return this.#all[id] as SimConnection;
  }

  /**
   * Opens a connection from `client` to `pod`. `staggered` gives it a random age already
   * (uniform over its first limit), as connections have in a cluster that has run for a while.
   */
  open(client: SimClient, pod: SimPod, staggered: boolean): SimConnection {
    const id = this.#free.pop() ?? this.#all.length;
    let conn = this.#all[id];
    if (conn === undefined) {
      conn = new SimConnection(id);
      this.#all[id] = conn;
    }
    const now = this.#scheduler.now;
    conn.generation++;
    conn.client = client;
    conn.pod = pod;
    conn.state = 'open';
    conn.requests = 0;
    conn.inFlight = 0;
    conn.maxAgeMs = this.clientPolicy.drawMaxAgeMs();
    conn.serverMaxAgeMs = this.serverPolicy.drawMaxAgeMs();
    const session = this.#sessions === undefined ? Number.POSITIVE_INFINITY : this.#sessions.sample(this.#random);
    let openedAt = now;
    if (staggered) {
      const first = Math.min(
        conn.maxAgeMs ?? Number.POSITIVE_INFINITY,
        conn.serverMaxAgeMs ?? Number.POSITIVE_INFINITY,
      );
      const u = this.#random.next();
      if (Number.isFinite(first)) openedAt = now - u * first;
      conn.sessionEndMs = now + u * session;
    } else {
      conn.sessionEndMs = now + session;
    }
    conn.openedAtMs = openedAt;
    conn.idleSinceMs = now;
    pod.openConnections++;
    this.#opened++;
    if (!staggered && now >= this.#windowFromMs && now < this.#windowToMs) this.#openedInWindow++;
    const deadline = Math.min(
      conn.maxAgeMs === undefined ? Number.POSITIVE_INFINITY : openedAt + conn.maxAgeMs,
      conn.serverMaxAgeMs === undefined ? Number.POSITIVE_INFINITY : openedAt + conn.serverMaxAgeMs,
      conn.sessionEndMs,
    );
    if (Number.isFinite(deadline)) this.#scheduler.at(deadline, this.#deadlineKind, id, conn.generation);
    return conn;
  }

  /**
   * May `conn` take a request now? Retires it (and returns false) when the client's or the
   * server's lifetime policy says so.
   */
  usable(conn: SimConnection): boolean {
    if (conn.state !== 'open') return false;
    if (!this.#clientLimits && !this.#serverIdleLimit) return true;
    const now = this.#scheduler.now;
    if (!this.#clientLimits || this.clientPolicy.canCarryAnother(conn, now).type === 'open') {
      // The server closes idle connections past its idle timeout (e.g. Node's keepAliveTimeout).
      if (conn.inFlight > 0 || !this.#serverIdleLimit || this.serverPolicy.idleVerdict(conn, now).type === 'open') {
        return true;
      }
    }
    this.retire(conn);
    return false;
  }

  /** Records a request starting on `conn`; retires it if this is its last request on either side. */
  startRequest(conn: SimConnection): void {
    conn.requests++;
    conn.inFlight++;
    if (!this.#requestLimits) return;
    if (this.clientPolicy.isLastRequest(conn.requests) || this.serverPolicy.isLastRequest(conn.requests)) {
      this.retire(conn);
    }
  }

  /** Records a request ending on `conn`; closes a retired connection once it is idle. */
  endRequest(conn: SimConnection): void {
    conn.inFlight--;
    if (conn.inFlight > 0) return;
    conn.idleSinceMs = this.#scheduler.now;
    if (conn.state === 'closing') this.#close(conn);
    else if (conn.state === 'closed') this.#release(conn);
  }

  /** Stops new requests on `conn`; it closes when idle. */
  retire(conn: SimConnection): void {
    if (conn.state !== 'open') return;
    conn.state = 'closing';
    this.#owner?.retired(conn);
    if (conn.inFlight === 0) this.#close(conn);
  }

  /** Closes `conn` now (its pod went away); requests in flight still finish on the pod. */
  abort(conn: SimConnection): void {
    if (conn.state === 'closed') return;
    if (conn.state === 'open') {
      conn.state = 'closing';
      this.#owner?.retired(conn);
    }
    this.#close(conn);
  }

  /** Every connection not yet closed to `pod`. */
  *openTo(pod: SimPod): Generator<SimConnection> {
    for (const conn of this.#all) if (conn.state !== 'closed' && conn.pod === pod) yield conn;
  }

  #close(conn: SimConnection): void {
    conn.state = 'closed';
    conn.generation++;
    conn.pod.openConnections--;
    this.#owner?.closed(conn);
    if (conn.inFlight === 0) this.#release(conn);
  }

  #release(conn: SimConnection): void {
    this.#free.push(conn.id);
  }

  #deadline(id: number, generation: number): void {
    const conn = this.#all[id];
    if (conn === undefined || conn.generation !== generation) return;
    this.retire(conn);
  }
}
