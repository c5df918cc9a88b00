/**
 * A connection pool for one origin that enforces the shared `LifetimePolicy` exactly. Each
 * connection is its own undici `Client` (one socket; pipelining 1 for HTTP/1.1, up to
 * `maxConcurrentStreams` once a socket turns out to speak HTTP/2). A request goes to an
 * available connection (most recently used first, so surplus connections can idle out), else
 * to a new connection while under `maxConnections`, else waits in a FIFO queue. The pool
 * counts requests per connection itself, so `maxRequestsPerConnection: N` means exactly N
 * (undici's own `maxRequestsPerClient` allows N+1) and the age and idle limits are checked on
 * every assignment and by one timer per idle connection (undici's `clientTtl` is lazy).
 *
 * Retiring a connection takes it out of rotation and `close()`s its Client: in-flight requests
 * finish, then the socket closes. `drain()` retires every connection (idle ones close at once)
 * and hands queued requests back so the caller can send them elsewhere; it is how an endpoint
 * that left the eligible set is let go.
 *
 * In the legacy (host-keyed) mode the origin is the Service name and `resolveEndpoint` picks
 * the endpoint when a connection is dialled, as kube-apiserver's dial function did.
 *
 * Its connections and the requests it runs on them are `PooledConnection` and `PoolRequest`
 * (`pooled-connection.ts`).
 */
import { isIP } from 'node:net';
import { type buildConnector, Client } from 'undici';
import type { Clock } from '../core/clock.js';
import type { Endpoint } from '../core/endpoint.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { Shutdown } from '../core/shutdown.js';
import type { CloseReason, LifetimePolicy } from './lifetime-policy.js';
import { PooledConnection, type PoolRequest } from './pooled-connection.js';

export interface EndpointPoolEvents {
  /** A socket opened (`endpoint` is known: the dialled one in legacy mode). */
  onConnectionOpen?(pool: EndpointPool, connection: PooledConnection): void;
  /** A socket closed, with why. */
  onConnectionClose?(pool: EndpointPool, connection: PooledConnection, reason: CloseReason): void;
}

export interface EndpointPoolOptions {
  /** `scheme://host:port` the Clients are created for (an endpoint, or the Service in legacy mode). */
  readonly origin: string;
  /** The endpoint the origin names; undefined in legacy mode. */
  readonly endpoint?: Endpoint;
  readonly lifetime: LifetimePolicy;
  readonly clock: Clock;
  /** Connections open at once (retiring ones not counted); undefined = unlimited. */
  readonly maxConnections: number | undefined;
  /** Dials sockets (undici `buildConnector` result with TLS and timeouts applied). */
  readonly connector: buildConnector.connector;
  /** Legacy mode: picks the endpoint to dial for each new connection. */
  readonly resolveEndpoint?: () => Endpoint | EvenlbError;
  /** Streams per HTTP/2 connection; default 100. */
  readonly maxConcurrentStreams?: number;
  /** Extra undici Client options (timeouts, allowH2); `connect` and `pipelining` are the pool's. */
  readonly clientOptions?: Client.Options;
  readonly events?: EndpointPoolEvents;
}

export class EndpointPool {
  readonly origin: string;
  readonly endpoint: Endpoint | undefined;
  readonly #o: EndpointPoolOptions;
  readonly #lifetime: LifetimePolicy;
  readonly #clock: Clock;
  readonly #connections = new Set<PooledConnection>();
  /** Connections with spare capacity, most recently released last. */
  readonly #available: PooledConnection[] = [];
  readonly #queue: PoolRequest[] = [];
  /** The lifetime policy has an idle or age limit / any limit: only then are times read / is it asked, per request. */
  readonly #timed: boolean;
  readonly #limited: boolean;
  #active = 0;
  #draining = false;
  /** `close()` was called: new requests are refused, queued ones still run. */
  #refusing = false;
  #onQueueEmpty: (() => void) | undefined;
  readonly #shutdown = new Shutdown();
  /** Sockets ever opened by this pool. */
  opened = 0;

  constructor(options: EndpointPoolOptions) {
    this.#o = options;
    this.origin = options.origin;
    this.endpoint = options.endpoint;
    this.#lifetime = options.lifetime;
    this.#clock = options.clock;
    const l = options.lifetime.options;
    this.#timed = l.idleTimeoutMs !== undefined || l.maxConnectionAgeMs !== undefined;
    this.#limited = this.#timed || l.maxRequestsPerConnection !== undefined;
  }

  /** True once `drain()`, `close()` or `destroy()` was called: no new request is accepted. */
  get draining(): boolean {
    return this.#draining || this.#refusing;
  }

  get queued(): number {
    return this.#queue.length;
  }

  connections(): IterableIterator<PooledConnection> {
    return this.#connections.values();
  }

  /** Sockets currently open. */
  get openConnections(): number {
    let n = 0;
    for (const c of this.#connections) if (c.socketOpen) n++;
    return n;
  }

  /** Runs `request` on a connection now, or queues it. A draining pool reroutes it. */
  dispatch(request: PoolRequest): void {
    if (this.#draining || this.#refusing) {
      request.reroute();
      return;
    }
    const conn = this.#takeAvailable() ?? this.#open();
    if (conn === undefined) this.#queue.push(request);
    else this.#assign(conn, request);
  }

  /** A request on `conn` ended. */
  release(conn: PooledConnection, reusable: boolean): void {
    conn.inFlight--;
    if (conn.inFlight === 0 && this.#timed) conn.idleSinceMs = this.#clock.now();
    if (!reusable && !conn.retiring) this.#retire(conn, 'error');
    if (conn.retiring) {
      if (conn.inFlight === 0) {
        this.#finishRetired(conn);
        if (this.#queue.length > 0) this.#pump();
      }
      return;
    }
    if (conn.availableIndex < 0) this.#makeAvailable(conn);
    if (this.#queue.length > 0) this.#pump();
    else if (conn.inFlight === 0 && this.#timed) this.#arm(conn);
  }

  /**
   * Stops taking requests: idle connections close now, busy ones after their in-flight
   * requests finish; queued requests are handed back through `reroute()`.
   */
  drain(reason: CloseReason = 'endpoint-removed'): void {
    if (this.#draining) return;
    this.#draining = true;
    for (const c of [...this.#connections]) this.#retire(c, reason);
    const queued = this.#queue.splice(0);
    for (const r of queued) r.reroute();
  }

  /**
   * Graceful: queued requests still run (undici's close contract), then the pool drains and
   * resolves when every connection has closed. Idempotent; a later `destroy()` settles it.
   */
  close(): Promise<void> {
    return this.#shutdown.close(async () => {
      this.#refusing = true;
      if (this.#queue.length > 0) {
        await new Promise<void>((resolve) => {
          this.#onQueueEmpty = resolve;
        });
      }
      this.drain('shutdown');
      await Promise.all([...this.#connections].map((c) => c.client.close().catch(() => {})));
    });
  }

  /** Abrupt: fails queued and in-flight requests with `err`; also settles a pending `close()`. Idempotent. */
  destroy(err?: Error): Promise<void> {
    return this.#shutdown.destroy(async () => {
      this.#draining = true;
      const error = err ?? new EvenlbError(ErrorCodes.CLOSED, `connection pool for ${this.origin} was destroyed`);
      for (const r of this.#queue.splice(0)) r.fail(error);
      await Promise.all(
        [...this.#connections].map((c) => {
          if (!c.retiring) this.#active--;
          c.retiring = true;
          c.retireReason ??= 'shutdown';
          c.timer?.cancel();
          this.#removeAvailable(c);
          return c.client.destroy(error).catch(() => {});
        }),
      );
    });
  }

  #takeAvailable(): PooledConnection | undefined {
    const list = this.#available;
    while (list.length > 0) {
      const conn = list[list.length - 1] as PooledConnection;
      const verdict = this.#limited
        ? this.#lifetime.canCarryAnother(conn, this.#timed ? this.#clock.now() : 0)
        : undefined;
      if (verdict?.type === 'retire') {
        this.#retire(conn, verdict.reason);
        continue;
      }
      if (conn.inFlight + 1 >= conn.capacity) this.#removeAvailable(conn);
      return conn;
    }
    return undefined;
  }

  #assign(conn: PooledConnection, request: PoolRequest): void {
    request.reused = conn.socketOpen && conn.requests > 0;
    conn.requests++;
    conn.inFlight++;
    request.connection = conn;
    conn.client.dispatch(request.opts, request);
    // Retire after dispatching: `close()` lets the queued request run, then closes the socket.
    if (this.#lifetime.isLastRequest(conn.requests) && !conn.retiring) this.#retire(conn, 'requests');
  }

  #pump(): void {
    while (this.#queue.length > 0) {
      const conn = this.#takeAvailable() ?? this.#open();
      if (conn === undefined) return;
      this.#assign(conn, this.#queue.shift() as PoolRequest);
    }
    const done = this.#onQueueEmpty;
    if (done !== undefined) {
      this.#onQueueEmpty = undefined;
      done();
    }
  }

  #open(): PooledConnection | undefined {
    const max = this.#o.maxConnections;
    if (max !== undefined && this.#active >= max) return undefined;
    const o = this.#o;
    const base = o.connector;
    let conn: PooledConnection | undefined;
    const connect: buildConnector.connector = (opts, callback) => {
      const c = conn as PooledConnection;
      let target = opts;
      if (o.resolveEndpoint !== undefined) {
        const picked = o.resolveEndpoint();
        if (picked instanceof EvenlbError) {
          callback(picked, null);
          return;
        }
        c.endpoint = picked;
        // Dial the endpoint's IP; TLS still verifies the name the Client was created for.
        const servername = opts.servername ?? (isIP(opts.hostname) === 0 ? opts.hostname : undefined);
        target = { ...opts, hostname: picked.address, host: picked.key, port: String(picked.port), servername };
      }
      base(target, (...args) => {
        const socket = args[1] as { alpnProtocol?: string | false | null } | null;
        if (args[0] === null && socket !== null && socket.alpnProtocol === 'h2') this.#useH2(c);
        callback(...args);
      });
    };
    const client = new Client(o.origin, { ...o.clientOptions, connect, pipelining: 1 });
    const now = this.#clock.now();
    conn = new PooledConnection(this, client, now, this.#lifetime.drawMaxAgeMs());
    conn.endpoint = o.endpoint;
    const c = conn;
    client.on('connect', () => this.#onConnect(c));
    client.on('disconnect', (_origin, _targets, err) => this.#onDisconnect(c, err));
    client.on('connectionError', () => this.#retire(c, 'error'));
    this.#connections.add(conn);
    this.#active++;
    return conn;
  }

  #useH2(conn: PooledConnection): void {
    const streams = this.#o.maxConcurrentStreams ?? 100;
    if (conn.capacity === streams) return;
    conn.capacity = streams;
    conn.client.pipelining = streams;
    if (!conn.retiring && !this.#draining && conn.availableIndex < 0 && conn.inFlight < streams) {
      this.#makeAvailable(conn);
      if (this.#queue.length > 0) queueMicrotask(() => this.#pump());
    }
  }

  #onConnect(conn: PooledConnection): void {
    if (conn.socketOpen) return;
    const now = this.#clock.now();
    // A Client reconnects for a request that was waiting when its socket closed: fresh counters.
    if (conn.sockets > 0) conn.requests = conn.inFlight;
    conn.sockets++;
    conn.socketOpen = true;
    conn.openedAtMs = now;
    this.opened++;
    this.#o.events?.onConnectionOpen?.(this, conn);
  }

  #onDisconnect(conn: PooledConnection, err: Error | null | undefined): void {
    const wasOpen = conn.socketOpen;
    conn.socketOpen = false;
    // undici reports its own keep-alive expiry as UND_ERR_INFO, the peer closing as UND_ERR_SOCKET.
    const code = (err as { code?: unknown } | null | undefined)?.code;
    const reason: CloseReason =
      conn.retireReason ?? (code === 'UND_ERR_INFO' ? 'idle' : code === 'UND_ERR_SOCKET' ? 'peer' : 'error');
    if (!conn.retiring) this.#retire(conn, reason);
    if (wasOpen) this.#o.events?.onConnectionClose?.(this, conn, reason);
  }

  #retire(conn: PooledConnection, reason: CloseReason): void {
    if (conn.retiring) return;
    conn.retiring = true;
    conn.retireReason = reason;
    conn.timer?.cancel();
    conn.timer = undefined;
    this.#active--;
    this.#removeAvailable(conn);
    if (conn.inFlight === 0) this.#finishRetired(conn);
    conn.client
      .close()
      .catch(() => {})
      .then(() => {
        conn.closed = true;
        this.#connections.delete(conn);
        if (this.#queue.length > 0 && !this.#draining) this.#pump();
      });
  }

  /**
   * Nothing of ours runs on a retired connection any more: make sure its Client goes away.
   * `Client.close()` waits for undici's own request count, which can stay above zero forever
   * after a failed connect (a TLS host-name mismatch leaves the errored request counted as
   * running), so a close that has not finished by the next turn is escalated to `destroy()`
   * — harmless here, nothing is left to fail.
   */
  #finishRetired(conn: PooledConnection): void {
    if (conn.closed || conn.escalating) return;
    conn.escalating = true;
    setImmediate(() => {
      if (!conn.closed) conn.client.destroy().catch(() => {});
    });
  }

  #makeAvailable(conn: PooledConnection): void {
    conn.availableIndex = this.#available.length;
    this.#available.push(conn);
  }

  #removeAvailable(conn: PooledConnection): void {
    const i = conn.availableIndex;
    if (i < 0) return;
    const list = this.#available;
    const last = list.pop() as PooledConnection;
    if (last !== conn) {
      list[i] = last;
      last.availableIndex = i;
    }
    conn.availableIndex = -1;
  }

  #arm(conn: PooledConnection): void {
    if (conn.timer !== undefined) return;
    const delay = this.#lifetime.nextDeadlineInMs(conn, this.#clock.now());
    if (delay === undefined) return;
    conn.timer = this.#clock.setTimeout(() => {
      conn.timer = undefined;
      if (conn.retiring || conn.inFlight > 0) return;
      const verdict = this.#lifetime.idleVerdict(conn, this.#clock.now());
      if (verdict.type === 'retire') this.#retire(conn, verdict.reason);
      else this.#arm(conn);
    }, delay);
  }
}
