/**
 * Upstream connections for the proxy's HTTP/1.1 data path: keep-alive TCP (or TLS) sockets to
 * one endpoint each, one request at a time, reading the response with the strict head parser
 * and forwarding body bytes as they arrive (no copy, no re-framing). `Http1Upstream` holds
 * one `Http1EndpointPool` per endpoint of a cluster and follows the cluster: a pool whose
 * endpoint leaves the eligible set drains (idle sockets close now, busy ones after their
 * response). Connections obey the cluster's `LifetimePolicy` exactly like the undici pools
 * do (N requests, a jittered age, an idle limit); without an idle limit an idle socket is
 * closed after 4 s — sooner when the server announced a shorter `Keep-Alive: timeout` — so
 * the proxy does not reuse a socket the server is about to close. Opened and closed sockets
 * are reported to the cluster, which counts them in its stats and metrics.
 */
import net, { isIP, type Socket } from 'node:net';
import tls from 'node:tls';
import type { EndpointTransport } from '../../cluster/attempt.js';
import type { Cluster } from '../../cluster/cluster.js';
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { Endpoint } from '../../core/endpoint.js';
import { ErrorCodes } from '../../core/errors.js';
import { Shutdown } from '../../core/shutdown.js';
import type { CloseReason, ConnectionLife, LifetimePolicy } from '../../pool/lifetime-policy.js';
import { ChunkedScanner } from './chunked-scanner.js';
import { isHeadError, parseResponseHead, type ResponseHead } from './message-head.js';

/** The side of an exchange that receives the response (the downstream connection). */
export interface ResponseSink {
  /** A connection for the waiting request (or why none could be opened). */
  onConnection(conn: UpstreamConnection | Error): void;
  /** The final response head (1xx heads are skipped). */
  onResponseHead(head: ResponseHead): void;
  onResponseBody(chunk: Buffer): void;
  /**
   * The upstream switched protocols (101) for an upgrade request: from now on `conn.socket`
   * is a raw byte stream owned by the sink; `rest` holds bytes that came after the head.
   */
  onUpgrade(conn: UpstreamConnection, head: ResponseHead, rest: Buffer): void;
  /** The response is complete; the connection is already back in its pool. */
  onResponseEnd(): void;
  /** The exchange failed; `responded` is true once a response byte had arrived. */
  onUpstreamError(err: Error, responded: boolean): void;
  /** Called after each upstream read has been handled (flush corked writes). */
  flush(): void;
}

/** Default idle limit for upstream sockets when the lifetime policy sets none. */
const DEFAULT_IDLE_MS = 4_000;
/** How often idle sockets are checked against their limits. */
const SWEEP_MS = 1_000;
/** Largest response head accepted from an upstream. */
const MAX_RESPONSE_HEAD_BYTES = 64 * 1024;
const MAX_RESPONSE_FIELDS = 256;

const P_IDLE = 0;
const P_HEAD = 1;
const P_LENGTH = 2;
const P_CHUNKED = 3;
const P_UNTIL_CLOSE = 4;

/** An error with a Node-style `code` that `statusForError` maps (connect failure, socket closed, protocol). */
function upstreamError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/** One keep-alive socket to an endpoint. */
export class UpstreamConnection implements ConnectionLife {
  readonly socket: Socket;
  readonly pool: Http1EndpointPool;
  openedAtMs: number;
  readonly maxAgeMs: number | undefined;
  requests = 0;
  inFlight = 0;
  idleSinceMs: number;
  /** Idle limit for this socket (the policy's, or the default shortened by the server's hint). */
  idleLimitMs: number;
  connected = false;
  closed = false;
  retireReason: CloseReason | undefined;
  /** The request currently on this socket has been written completely. */
  requestSent = false;
  #sink: ResponseSink | undefined;
  #phase = P_IDLE;
  #buf: Buffer | undefined;
  #headOnly = false;
  #remaining = 0;
  #scanner: ChunkedScanner | undefined;
  #reusable = true;
  #responded = false;
  #error: Error | undefined;
  #upgrade = false;
  /** The socket carries an upgraded protocol (WebSocket...): never pooled again. */
  tunnel = false;
  readonly #onSocketData = (chunk: Buffer): void => this.#onData(chunk);

  constructor(pool: Http1EndpointPool, socket: Socket, nowMs: number, maxAgeMs: number | undefined, idleMs: number) {
    this.pool = pool;
    this.socket = socket;
    this.openedAtMs = nowMs;
    this.idleSinceMs = nowMs;
    this.maxAgeMs = maxAgeMs;
    this.idleLimitMs = idleMs;
    socket.on('data', this.#onSocketData);
    socket.on('error', (err) => {
      this.#error ??= err;
    });
    socket.on('end', () => {
      if (this.#phase === P_UNTIL_CLOSE) this.#complete(false);
    });
    socket.on('close', () => this.#onClose());
  }

  /** True when the socket carried a request before the current one. */
  get reused(): boolean {
    return this.requests > 1;
  }

  /**
   * Writes a request head; `headOnly` for HEAD requests (the response has no body), `upgrade`
   * when the request asks to switch protocols (a 101 then hands the socket to the sink).
   */
  send(sink: ResponseSink, head: string, headOnly: boolean, upgrade = false): void {
    this.#sink = sink;
    this.#phase = P_HEAD;
    this.#headOnly = headOnly;
    this.#upgrade = upgrade;
    this.#reusable = true;
    this.#responded = false;
    this.requestSent = false;
    this.socket.write(head, 'latin1');
  }

  /** Stops the exchange and closes the socket (the client went away, a timeout fired). */
  abort(reason: CloseReason = 'error'): void {
    this.#sink = undefined;
    this.retireReason ??= reason;
    this.socket.destroy();
  }

  #onData(chunk: Buffer): void {
    const sink = this.#sink;
    if (sink === undefined) {
      // Bytes with no request outstanding: the server is out of step; never reuse it.
      this.retireReason ??= 'error';
      this.socket.destroy();
      return;
    }
    this.#responded = true;
    let buf = chunk;
    let pos = 0;
    if (this.#phase === P_HEAD) {
      buf = this.#buf === undefined ? chunk : Buffer.concat([this.#buf, chunk]);
      this.#buf = undefined;
      for (;;) {
        const head = parseResponseHead(buf, pos, MAX_RESPONSE_HEAD_BYTES, MAX_RESPONSE_FIELDS);
        if (head === undefined) {
          this.#buf = pos === 0 ? buf : buf.subarray(pos);
          return;
        }
        if (isHeadError(head)) {
          this.#fail(
            upstreamError(
              ErrorCodes.UPSTREAM_PROTOCOL,
              `upstream ${this.pool.endpoint.key} sent a malformed response head`,
            ),
          );
          return;
        }
        pos += head.length;
        if (head.status < 200) {
          if (head.status === 101 && this.#upgrade) {
            this.#switchProtocols(sink, head, buf.subarray(pos));
            return;
          }
          if (head.status === 101) {
            this.#fail(
              upstreamError(
                ErrorCodes.UPSTREAM_PROTOCOL,
                `upstream ${this.pool.endpoint.key} switched protocols unasked`,
              ),
            );
            return;
          }
          continue; // interim responses are not forwarded
        }
        this.#startBody(head);
        sink.onResponseHead(head);
        break;
      }
      if (this.#sink !== sink) return; // the sink gave up while handling the head
    }
    this.#body(sink, buf, pos);
    if (this.#sink === sink) sink.flush();
  }

  #switchProtocols(sink: ResponseSink, head: ResponseHead, rest: Buffer): void {
    this.#sink = undefined;
    this.#phase = P_IDLE;
    this.tunnel = true;
    this.socket.off('data', this.#onSocketData);
    sink.onUpgrade(this, head, rest);
  }

  #startBody(head: ResponseHead): void {
    if (head.close) this.#reusable = false;
    if (head.keepAliveMs !== undefined && this.pool.idleFromPolicy === undefined) {
      this.idleLimitMs = Math.max(500, Math.min(this.idleLimitMs, head.keepAliveMs - 1000));
    }
    if (this.#headOnly || head.status === 204 || head.status === 304) {
      this.#phase = P_LENGTH;
      this.#remaining = 0;
    } else if (head.chunked) {
      this.#phase = P_CHUNKED;
      this.#scanner = new ChunkedScanner();
    } else if (head.transferEncoding !== undefined || head.contentLength < 0) {
      this.#phase = P_UNTIL_CLOSE;
      this.#reusable = false;
    } else {
      this.#phase = P_LENGTH;
      this.#remaining = head.contentLength;
    }
  }

  #body(sink: ResponseSink, buf: Buffer, pos: number): void {
    const len = buf.length;
    switch (this.#phase) {
      case P_LENGTH: {
        const n = Math.min(this.#remaining, len - pos);
        if (n > 0) {
          this.#remaining -= n;
          sink.onResponseBody(pos === 0 && n === len ? buf : buf.subarray(pos, pos + n));
        }
        if (this.#remaining === 0) {
          if (pos + n < len) this.#reusable = false; // more bytes than the response had
          this.#complete(this.#reusable);
        }
        return;
      }
      case P_CHUNKED: {
        const scanner = this.#scanner as ChunkedScanner;
        const end = scanner.scan(buf, pos, len);
        if (end < 0) {
          this.#fail(
            upstreamError(
              ErrorCodes.UPSTREAM_PROTOCOL,
              `upstream ${this.pool.endpoint.key} sent malformed chunked data`,
            ),
          );
          return;
        }
        if (end > pos) sink.onResponseBody(pos === 0 && end === len ? buf : buf.subarray(pos, end));
        if (scanner.done) {
          if (end < len) this.#reusable = false;
          this.#complete(this.#reusable);
        }
        return;
      }
      case P_UNTIL_CLOSE:
        if (pos < len) sink.onResponseBody(pos === 0 ? buf : buf.subarray(pos));
        return;
      default:
        return;
    }
  }

  #complete(reusable: boolean): void {
    const sink = this.#sink;
    this.#sink = undefined;
    this.#phase = P_IDLE;
    this.#scanner = undefined;
    this.pool.release(this, reusable && this.requestSent);
    if (sink !== undefined) {
      sink.flush();
      sink.onResponseEnd();
    }
  }

  #fail(err: Error): void {
    const sink = this.#sink;
    this.#sink = undefined;
    this.retireReason ??= 'error';
    this.socket.destroy();
    sink?.onUpstreamError(err, this.#responded);
  }

  #onClose(): void {
    const wasConnected = this.connected;
    this.closed = true;
    this.connected = false;
    this.pool.forget(this, wasConnected);
    const sink = this.#sink;
    if (sink === undefined) return;
    this.#sink = undefined;
    if (this.#phase === P_UNTIL_CLOSE && this.#error === undefined) {
      sink.flush();
      sink.onResponseEnd();
      return;
    }
    const err =
      this.#error ??
      upstreamError(
        'UND_ERR_SOCKET',
        `upstream ${this.pool.endpoint.key} closed the connection before the response ended`,
      );
    sink.onUpstreamError(err, this.#responded);
  }
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
 * Dials `endpoint`: plain TCP, or TLS offering only http/1.1 and verifying the certificate
 * against `servername` (sent as SNI unless it is an IP address), never the endpoint's IP.
 */
function dialSocket(endpoint: Endpoint, settings: Http1PoolSettings, servername: string): Socket {
  const t = settings.tls;
  if (t === undefined) return net.connect({ host: endpoint.address, port: endpoint.port, noDelay: true });
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
  readonly #owner: Http1Upstream;
  readonly #s: Http1PoolSettings;
  /** Idle sockets, most recently used last. */
  readonly #idle: UpstreamConnection[] = [];
  readonly #all = new Set<UpstreamConnection>();
  readonly #waiting: ResponseSink[] = [];
  #opening = 0;
  draining = false;

  constructor(owner: Http1Upstream, endpoint: Endpoint, settings: Http1PoolSettings, servername: string, key: string) {
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

  /**
   * A connected idle socket for `sink` now, or undefined: then `sink.onConnection` is called
   * once a socket is connected (or with the error when dialling failed).
   */
  acquire(sink: ResponseSink): UpstreamConnection | undefined {
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
    const socket = dialSocket(e, this.#s, this.servername);
    this.#opening++;
    const s = this.#s;
    const conn = new UpstreamConnection(
      this,
      socket,
      s.clock.now(),
      s.lifetime.drawMaxAgeMs(),
      s.lifetime.options.idleTimeoutMs ?? DEFAULT_IDLE_MS,
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

  /** Destroys every socket. */
  destroy(): void {
    this.draining = true;
    for (const conn of this.#all) conn.abort('shutdown');
  }
}

/**
 * All HTTP/1.1 upstream sockets of one proxy cluster — its one HTTP/1.1 transport: one
 * `Http1EndpointPool` per endpoint (per verified server name with TLS), one
 * `connectionsPerEndpoint` cap. The cluster picks and accounts (`Cluster.acquire`); this only
 * holds sockets, and drains an endpoint's pools when it leaves the eligible set.
 */
export class Http1Upstream implements EndpointTransport<Http1EndpointPool, [servername?: string]> {
  readonly #cluster: Cluster;
  readonly #settings: Http1PoolSettings;
  /** The pool new requests use, per pool key. */
  readonly #pools = new Map<string, Http1EndpointPool>();
  /** Every pool that still has sockets (draining ones included). */
  readonly #live = new Set<Http1EndpointPool>();
  readonly #unsubscribe: () => void;
  readonly #shutdown = new Shutdown();
  #timer: TimerHandle | undefined;
  #emptied: (() => void) | undefined;

  constructor(cluster: Cluster, settings: Http1PoolSettings) {
    this.#cluster = cluster;
    this.#settings = settings;
    this.#unsubscribe = cluster.onEligibleChange((eligible) => {
      for (const pool of [...this.#pools.values()]) {
        if (!eligible.has(pool.endpoint.key)) this.drainEndpoint(pool.endpoint.key);
      }
    });
  }

  /**
   * The pool for `endpoint` (created on first use, or when the previous one drains); with TLS,
   * one per server name, since a socket is verified for one name.
   */
  connectionFor(endpoint: Endpoint, servername = ''): Http1EndpointPool {
    const key = servername === '' ? endpoint.key : `${endpoint.key} ${servername}`;
    let pool = this.#pools.get(key);
    if (pool === undefined || pool.draining) {
      pool = new Http1EndpointPool(this, endpoint, this.#settings, servername, key);
      this.#pools.set(key, pool);
      this.#live.add(pool);
      this.#arm();
    }
    return pool;
  }

  /** The endpoint left: its pools take no new request, idle sockets close now, busy ones after their response. */
  drainEndpoint(endpointKey: string): void {
    for (const [key, pool] of [...this.#pools]) {
      if (pool.endpoint.key !== endpointKey) continue;
      this.#pools.delete(key);
      pool.drain('endpoint-removed');
    }
  }

  /** Reports a socket opened or closed to the cluster (stats, metrics). */
  noteConnection(key: string, change: 'opened' | 'closed', reason?: CloseReason): void {
    this.#cluster.noteConnection(key, change, reason);
  }

  /** A pool drained or lost a socket: forget it once it is empty. */
  poolChanged(pool: Http1EndpointPool): void {
    if (!pool.draining || pool.size > 0) return;
    this.#live.delete(pool);
    if (this.#pools.get(pool.key) === pool) this.#pools.delete(pool.key);
    if (this.#live.size === 0) this.#emptied?.();
  }

  #arm(): void {
    if (this.#timer !== undefined || this.#shutdown.closed) return;
    const clock = this.#settings.clock;
    this.#timer = clock.setTimeout(() => {
      this.#timer = undefined;
      const now = clock.now();
      for (const pool of this.#live) pool.sweep(now);
      if (this.#live.size > 0) this.#arm();
    }, SWEEP_MS);
  }

  /** Graceful: idle sockets close now, busy ones after their response; settles once all are closed. Idempotent. */
  close(): Promise<void> {
    return this.#shutdown.close(() => {
      this.#stop();
      const emptied = new Promise<void>((resolve) => {
        this.#emptied = resolve;
      });
      for (const p of [...this.#live]) p.drain('shutdown');
      if (this.#live.size === 0) this.#emptied?.();
      return emptied;
    });
  }

  /** Abrupt: every socket is destroyed (their exchanges fail); also settles a pending `close()`. Idempotent. */
  destroy(_err?: Error): Promise<void> {
    return this.#shutdown.destroy(async () => {
      this.#stop();
      for (const p of [...this.#live]) p.destroy();
    });
  }

  #stop(): void {
    this.#unsubscribe();
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#pools.clear();
  }
}
