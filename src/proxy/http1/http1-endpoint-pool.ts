/**
 * The keep-alive HTTP/1.1 sockets to one endpoint (`Http1EndpointPool`): idle sockets reused
 * most-recently-used first while the cluster's `LifetimePolicy` lets them carry another request
 * (N requests, a jittered age, an idle limit); without an idle limit an idle socket is closed
 * after 4 s — sooner when the server announced a shorter `Keep-Alive: timeout` — so the proxy
 * does not reuse a socket the server is about to close. At most `maxConnections` sockets; a
 * request beyond that waits for one. Opened and closed sockets are reported to the owner.
 */
import net, { isIP, type Socket } from 'node:net';
import tls from 'node:tls';
import type { Clock } from '../../core/clock.js';
import type { Endpoint } from '../../core/endpoint.js';
import { ErrorCodes } from '../../core/errors.js';
import type { CloseReason, LifetimePolicy } from '../../pool/lifetime-policy.js';
import { type ResponseSink, UpstreamConnection, upstreamError } from './upstream-connection.js';

/** Default idle limit for upstream sockets when the lifetime policy sets none. */
const DEFAULT_IDLE_MS = 4_000;

/** What an endpoint pool reports to the transport that owns it (`Http1Upstream`). */
export interface PoolOwner {
  /** A socket to endpoint `key` opened or closed (the cluster counts it). */
  noteConnection(key: string, change: 'opened' | 'closed', reason?: CloseReason): void;
  /** The pool's sockets or waiters changed (it may be empty now, or draining). */
  poolChanged(pool: Http1EndpointPool): void;
}

export interface Http1PoolSettings {
  readonly lifetime: LifetimePolicy;
  readonly clock: Clock;
  readonly connectTimeoutMs: number;
  /** Sockets per endpoint; undefined = unlimited (requests never wait for a socket). */
  readonly maxConnections: number | undefined;
  /** TLS to the endpoints (`https` clusters); undefined = plain TCP. */
  readonly tls?: {
    readonly ca?: Buffer;
    readonly rejectUnauthorized: boolean;
  };
}

/**
 * The one buffer plain upstream sockets read into (`onread`): a read is handed over as a copy
 * of its bytes at once (`UpstreamConnection.read`), before any other socket reads, so every
 * socket can share it. This skips the readable-stream machinery (a push, a 'data' event and a
 * read-more tick per read) on the response path.
 */
const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);

/**
 * Dials `endpoint`: plain TCP, whose reads go to `onRead` (see `READ_BUFFER`), or TLS offering
 * only http/1.1 and verifying the certificate against `servername` (sent as SNI unless it is an
 * IP address), never the endpoint's IP, read through 'data' events.
 */
function dialSocket(
  endpoint: Endpoint,
  settings: Http1PoolSettings,
  servername: string,
  onRead: (chunk: Buffer) => void,
): Socket {
  const t = settings.tls;
  if (t === undefined) {
    return net.connect({
      host: endpoint.address,
      port: endpoint.port,
      noDelay: true,
      onread: {
        buffer: READ_BUFFER,
        callback: (bytes: number): boolean => {
          const chunk = Buffer.allocUnsafe(bytes);
          READ_BUFFER.copy(chunk, 0, 0, bytes);
          onRead(chunk);
          return true;
        },
      },
    });
  }
  const name = servername === '' ? endpoint.address : servername;
  const socket = tls.connect({
    host: endpoint.address,
    port: endpoint.port,
    ALPNProtocols: ['http/1.1'],
    rejectUnauthorized: t.rejectUnauthorized,
    ...(t.ca === undefined ? {} : { ca: t.ca }),
    ...(isIP(name) === 0 ? { servername: name } : {}),
    checkServerIdentity: (_host, cert) => tls.checkServerIdentity(name, cert),
  });
  socket.setNoDelay(true);
  return socket;
}

/** The sockets to one endpoint. */
export class Http1EndpointPool {
  readonly endpoint: Endpoint;
  /** The TLS server name its sockets were verified for ('' for plain TCP). */
  readonly servername: string;
  /** Its key in the owner's map: the endpoint key, plus the server name for TLS. */
  readonly key: string;
  readonly #owner: PoolOwner;
  readonly #s: Http1PoolSettings;
  /** Idle sockets, most recently used last. */
  readonly #idle: UpstreamConnection[] = [];
  readonly #all = new Set<UpstreamConnection>();
  readonly #waiting: ResponseSink[] = [];
  #opening = 0;
  draining = false;

  constructor(owner: PoolOwner, endpoint: Endpoint, settings: Http1PoolSettings, servername: string, key: string) {
    this.#owner = owner;
    this.endpoint = endpoint;
    this.#s = settings;
    this.servername = servername;
    this.key = key;
  }

  get idleFromPolicy(): number | undefined {
    return this.#s.lifetime.options.idleTimeoutMs;
  }

  /** Open sockets. */
  get size(): number {
    return this.#all.size;
  }

  /** Idle sockets (open, no request on them). */
  get idleCount(): number {
    return this.#idle.length;
  }

  /** Requests waiting for a socket (`connectionsPerEndpoint` reached). */
  get queued(): number {
    return this.#waiting.length;
  }

  /**
   * A connected idle socket for `sink` now, or undefined: then `sink.onConnection` is called
   * once a socket is connected (or with the error when dialling failed).
   */
  acquire(sink: ResponseSink): UpstreamConnection | undefined {
    if (this.draining) {
      // A pool handed out after its transport shut down: no new sockets.
      const err = upstreamError(ErrorCodes.CLOSED, `endpoint ${this.endpoint.key} is draining`);
      queueMicrotask(() => sink.onConnection(err));
      return undefined;
    }
    const now = this.#s.clock.now();
    const idle = this.#idle;
    while (idle.length > 0) {
      const conn = idle.pop() as UpstreamConnection;
      if (conn.closed) continue;
      const verdict = this.#s.lifetime.canCarryAnother(conn, now);
      if (verdict.type === 'retire') {
        this.#retire(conn, verdict.reason);
        continue;
      }
      if (now - conn.idleSinceMs >= conn.idleLimitMs) {
        this.#retire(conn, 'idle');
        continue;
      }
      this.#take(conn);
      return conn;
    }
    const max = this.#s.maxConnections;
    if (max !== undefined && this.#all.size + this.#opening >= max) {
      this.#waiting.push(sink);
      return undefined;
    }
    this.#dial(sink);
    return undefined;
  }

  /** Withdraws a sink that is waiting for a socket. */
  cancel(sink: ResponseSink): void {
    const i = this.#waiting.indexOf(sink);
    if (i >= 0) this.#waiting.splice(i, 1);
  }

  #take(conn: UpstreamConnection): void {
    conn.requests++;
    conn.inFlight = 1;
  }

  #dial(sink: ResponseSink): void {
    const e = this.endpoint;
    const s = this.#s;
    // Reads start once connected, after `conn` exists.
    const socket = dialSocket(e, s, this.servername, (chunk) => conn.read(chunk));
    this.#opening++;
    const conn = new UpstreamConnection(
      this,
      socket,
      s.clock.now(),
      s.lifetime.drawMaxAgeMs(),
      s.lifetime.options.idleTimeoutMs ?? DEFAULT_IDLE_MS,
      s.tls === undefined ? 'callback' : 'events',
    );
    this.#all.add(conn);
    socket.setTimeout(s.connectTimeoutMs);
    const onTimeout = (): void => {
      socket.destroy(
        upstreamError('UND_ERR_CONNECT_TIMEOUT', `connecting to ${e.key} took longer than ${s.connectTimeoutMs} ms`),
      );
    };
    socket.once('timeout', onTimeout);
    const onEarlyClose = (): void => {
      this.#opening--;
      const err =
        (socket.errored as Error | null) ??
        upstreamError('ECONNRESET', `connection to ${e.key} closed while connecting`);
      sink.onConnection(err);
    };
    socket.once('close', onEarlyClose);
    socket.once(this.#s.tls === undefined ? 'connect' : 'secureConnect', () => {
      socket.off('close', onEarlyClose);
      socket.off('timeout', onTimeout);
      socket.setTimeout(0);
      this.#opening--;
      conn.connected = true;
      conn.openedAtMs = s.clock.now();
      this.#owner.noteConnection(e.key, 'opened');
      if (this.draining) conn.retireReason = 'endpoint-removed';
      this.#take(conn);
      sink.onConnection(conn);
    });
  }

  /** A response ended on `conn`; `reusable` false closes it. */
  release(conn: UpstreamConnection, reusable: boolean): void {
    conn.inFlight = 0;
    const now = this.#s.clock.now();
    conn.idleSinceMs = now;
    if (!reusable || this.draining || conn.closed) {
      this.#retire(conn, conn.closed ? 'peer' : this.draining ? 'endpoint-removed' : 'error');
      return;
    }
    const verdict = this.#s.lifetime.canCarryAnother(conn, now);
    if (verdict.type === 'retire') {
      this.#retire(conn, verdict.reason);
      return;
    }
    const waiter = this.#waiting.shift();
    if (waiter !== undefined) {
      this.#take(conn);
      // Hand over on the next tick: the releasing exchange is still unwinding.
      queueMicrotask(() => (conn.closed ? this.#retryWaiter(waiter) : waiter.onConnection(conn)));
      return;
    }
    this.#idle.push(conn);
  }

  #retryWaiter(sink: ResponseSink): void {
    const conn = this.acquire(sink);
    if (conn !== undefined) sink.onConnection(conn);
  }

  /** `conn` closed; `wasConnected` tells whether it had been counted as open. */
  forget(conn: UpstreamConnection, wasConnected: boolean): void {
    if (!this.#all.delete(conn)) return;
    const i = this.#idle.indexOf(conn);
    if (i >= 0) this.#idle.splice(i, 1);
    if (wasConnected) this.#owner.noteConnection(this.endpoint.key, 'closed', conn.retireReason ?? 'peer');
    // A socket slot freed up: dial for the next waiting request.
    const waiter = this.#waiting.shift();
    if (waiter !== undefined && !this.draining) this.#dial(waiter);
    else if (waiter !== undefined)
      waiter.onConnection(upstreamError(ErrorCodes.CLOSED, `endpoint ${this.endpoint.key} left`));
    this.#owner.poolChanged(this);
  }

  #retire(conn: UpstreamConnection, reason: CloseReason): void {
    conn.retireReason ??= reason;
    if (conn.closed) {
      this.forget(conn, false);
      return;
    }
    conn.socket.end();
    conn.socket.destroySoon();
  }

  /** Closes idle sockets past their limits. */
  sweep(nowMs: number): void {
    const idle = this.#idle;
    for (let i = idle.length - 1; i >= 0; i--) {
      const conn = idle[i] as UpstreamConnection;
      const verdict = this.#s.lifetime.idleVerdict(conn, nowMs);
      const reason =
        verdict.type === 'retire' ? verdict.reason : nowMs - conn.idleSinceMs >= conn.idleLimitMs ? 'idle' : undefined;
      if (reason === undefined) continue;
      idle.splice(i, 1);
      this.#retire(conn, reason);
    }
  }

  /** No new requests: idle sockets close now, busy ones after their response; waiters fail. */
  drain(reason: CloseReason): void {
    this.draining = true;
    for (const conn of this.#idle.splice(0)) this.#retire(conn, reason);
    for (const w of this.#waiting.splice(0)) {
      w.onConnection(upstreamError(ErrorCodes.CLOSED, `endpoint ${this.endpoint.key} is draining`));
    }
    this.#owner.poolChanged(this);
  }

  /** Destroys every socket: the requests on them and those waiting for one fail with `err`. */
  destroy(err: Error): void {
    this.draining = true;
    for (const w of this.#waiting.splice(0)) w.onConnection(err);
    for (const conn of [...this.#all]) {
      conn.retireReason ??= 'shutdown';
      conn.socket.destroy(err);
    }
  }
}
