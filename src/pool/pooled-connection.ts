/**
 * One connection of an `EndpointPool` (one undici `Client` with at most one socket) with the
 * counters its `LifetimePolicy` reads, and the request shape the pool runs on it
 * (`PoolRequest`: a controller-style undici handler that knows its own options). The pool
 * assigns requests, retires and closes connections; a request hands its connection back with
 * `release()` when it ends.
 */
import type { Client, Dispatcher } from 'undici';
import type { TimerHandle } from '../core/clock.js';
import type { Endpoint } from '../core/endpoint.js';
import type { CloseReason, ConnectionLife } from './lifetime-policy.js';

/** A request the pool can run: a controller-style undici handler that knows its own options. */
export interface PoolRequest extends Dispatcher.DispatchHandler {
  readonly opts: Dispatcher.DispatchOptions;
  /** Set by the pool when the request is assigned to a connection. */
  connection: PooledConnection | undefined;
  /** Set by the pool: the connection had already carried a request on its current socket. */
  reused?: boolean;
  /** The pool will not run this request (it is draining): send it somewhere else. */
  reroute(): void;
  /** The pool will never run this request (it was destroyed): fail it with `err`. */
  fail(err: Error): void;
}

/** The pool a connection belongs to, as the connection sees it (`EndpointPool`). */
export interface ConnectionOwner {
  /** A request on `conn` ended; `reusable` false retires the connection. */
  release(conn: PooledConnection, reusable: boolean): void;
}

let nextConnectionId = 1;

/** One connection (one undici Client with at most one socket), with the counters the policy reads. */
export class PooledConnection implements ConnectionLife {
  readonly id = nextConnectionId++;
  readonly client: Client;
  readonly pool: ConnectionOwner;
  openedAtMs: number;
  maxAgeMs: number | undefined;
  requests = 0;
  inFlight = 0;
  /** When the last request ended (kept only while the lifetime policy has a time limit: nothing else reads it). */
  idleSinceMs: number;
  /** Requests this connection may carry at once: 1 for HTTP/1.1, more once HTTP/2 is seen. */
  capacity = 1;
  /** The endpoint the socket goes to: fixed for an endpoint pool; in legacy mode set when the socket is dialled. */
  endpoint: Endpoint | undefined;
  socketOpen = false;
  /** Sockets this Client has opened (undici reconnects a Client for a request that was waiting). */
  sockets = 0;
  retiring = false;
  retireReason: CloseReason | undefined;
  closed = false;
  /** A destroy of its Client is scheduled (see `EndpointPool#finishRetired`). */
  escalating = false;
  timer: TimerHandle | undefined;
  /** Position in the pool's available list, or -1. */
  availableIndex = -1;

  constructor(pool: ConnectionOwner, client: Client, nowMs: number, maxAgeMs: number | undefined) {
    this.pool = pool;
    this.client = client;
    this.openedAtMs = nowMs;
    this.idleSinceMs = nowMs;
    this.maxAgeMs = maxAgeMs;
  }

  /** Called by the request when it ends; `reusable` false retires the connection (it failed). */
  release(reusable: boolean): void {
    this.pool.release(this, reusable);
  }
}
