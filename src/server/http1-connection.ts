/**
 * An HTTP/1.x keep-alive connection. A connection closes only at a response boundary the
 * client can see: the response that reaches a limit is sent with `Connection: close` (decided
 * before its headers are written) and the socket closes once it is finished. Requests the client
 * pipelined behind that response are never handed to the application — the socket closes
 * without answering them, which tells the client they were not processed (RFC 9112 §9.3.2) —
 * so exactly `maxRequestsPerConnection` requests are served per connection.
 *
 * With an age limit, every keep-alive response announces `Keep-Alive: timeout=<s>` no larger
 * than the time the connection has left (nor than the server's `keepAliveTimeout`): clients
 * that honour it (undici, Node's http.Agent, which subtract a safety threshold) stop reusing
 * the socket while it is idle before the server would close it. HTTP/1 cannot close an idle
 * connection without racing a client that is writing to it, so a response written with less
 * than a whole second left — too little to announce — is sent with `Connection: close`
 * instead: the connection retires up to a second early rather than by an idle close.
 *
 * A connection that reaches its age while a response whose headers are already out is in
 * flight closes after its *next* response; if none comes, it is closed once it has been idle
 * for `idleCloseDelayMs` (a last resort for clients that ignore `Keep-Alive`: waiting until it
 * has been quiet makes the race unlikely, not impossible).
 */
import type http from 'node:http';
import type net from 'node:net';
import type { CloseReason } from '../pool/lifetime-policy.js';
import type { RequestTap } from './request-tap.js';
import { type ConnectionHost, TrackedConnection } from './tracked-connection.js';

/** A connection that has carried no request is not closed as idle sooner than this. */
const FRESH_CONNECTION_GRACE_MS = 1000;

/** `Keep-Alive` counts whole seconds: with less than this left, close with the response. */
const ANNOUNCE_UNIT_MS = 1000;
const KEEP_ALIVE_TIMEOUT = /timeout=(\d+)/i;

export class Http1Connection extends TrackedConnection {
  readonly protocol = 'http1' as const;
  readonly socket: net.Socket;
  /** Responses of the requests in flight, oldest first (several when the client pipelines). */
  readonly #pending: http.ServerResponse[] = [];
  /** A response carrying `Connection: close` is in flight: nothing after it is served. */
  #closeQueued = false;

  constructor(host: ConnectionHost, socket: net.Socket) {
    super(host);
    this.socket = socket;
    socket.once('close', () => this.markClosed());
  }

  /**
   * A request arrived. Returns false when it must not be served (it was pipelined behind the
   * response that closes the connection); the caller then does not emit it. An admitted request
   * is shown to `tap`, whose end is told from this response's one `close` listener.
   */
  admit(req: http.IncomingMessage, res: http.ServerResponse, tap?: RequestTap): boolean {
    if (this.#closeQueued || this.closed) {
      req.resume();
      return false;
    }
    const { policy, clock } = this.host.settings;
    const before = policy.canCarryAnother(this, clock.now());
    this.requestStarted();
    this.#pending.push(res);
    const tapped = tap?.request(req, res);
    res.on('close', () => {
      const i = this.#pending.indexOf(res);
      if (i >= 0) this.#pending.splice(i, 1);
      this.requestEnded();
      tapped?.end(res.statusCode >= 500);
    });

    let reason: CloseReason | undefined;
    if (policy.isLastRequest(this.requests)) reason = 'requests';
    else if (this.retiring !== undefined) reason = this.retiring;
    else if (before.type === 'retire' && before.reason === 'age') reason = 'age';
    else if (this.host.draining) reason = 'shutdown';

    if (reason !== undefined) {
      this.#closeAfter(res);
      this.retire(reason);
    } else if (!res.shouldKeepAlive) {
      // The client asked for `Connection: close` (or spoke HTTP/1.0): this is its last request.
      this.#closeQueued = true;
    } else if (this.maxAgeMs !== undefined) {
      this.#beforeHeaders(res, () => this.#announceTimeLeft(res));
    }
    return true;
  }

  protected onRetire(reason: CloseReason): void {
    if (this.#closeQueued) return;
    const last = this.#pending.at(-1);
    if (last !== undefined && !last.headersSent) {
      this.#closeAfter(last);
      return;
    }
    // Shedding exists to move load: an idle connection carries none, so it closes only with a
    // response (`Connection: close`), never by the racy idle close.
    if (reason === 'fair-share') return;
    if (this.inFlight === 0 && (reason === 'idle' || this.#idleLongEnough(this.host.settings.clock.now()))) {
      this.destroy(reason);
    }
  }

  protected onRetiringTick(nowMs: number): void {
    if (!this.#closeQueued && this.inFlight === 0 && this.#idleLongEnough(nowMs)) {
      this.destroy(this.retiring ?? 'peer');
      return;
    }
    this.arm();
  }

  protected retiringTickInMs(nowMs: number): number | undefined {
    if (this.#closeQueued || this.inFlight > 0 || this.retiring === 'fair-share') return undefined;
    return Math.max(0, this.idleSinceMs + this.#idleCloseDelayMs() - nowMs);
  }

  protected destroyTransport(): void {
    this.socket.destroy();
  }

  #idleLongEnough(nowMs: number): boolean {
    return nowMs - this.idleSinceMs >= this.#idleCloseDelayMs();
  }

  /**
   * How long a retiring idle connection must stay quiet before it is closed: `idleCloseDelayMs`,
   * but at least FRESH_CONNECTION_GRACE_MS for a connection that has not carried a request yet —
   * its client has just connected and is about to send one.
   */
  #idleCloseDelayMs(): number {
    const delay = this.host.settings.options.idleCloseDelayMs;
    return this.requests === 0 ? Math.max(delay, FRESH_CONNECTION_GRACE_MS) : delay;
  }

  /** Runs `action` right before `res` writes its headers (explicitly or on the first write/end). */
  #beforeHeaders(res: http.ServerResponse, action: () => void): void {
    const writeHead = res.writeHead;
    res.writeHead = function (this: http.ServerResponse, ...args: unknown[]) {
      res.writeHead = writeHead;
      if (!res.headersSent) action();
      return (writeHead as (...a: unknown[]) => http.ServerResponse).apply(this, args);
    } as typeof res.writeHead;
  }

  /**
   * Headers of a keep-alive response are about to be written: announce how long the client may
   * keep the connection idle — no longer than it has left — or, with less than a whole second
   * left, make this response the last one.
   */
  #announceTimeLeft(res: http.ServerResponse): void {
    if (!res.shouldKeepAlive || this.maxAgeMs === undefined || this.closed) return;
    const leftMs = this.openedAtMs + this.maxAgeMs - this.host.settings.clock.now();
    if (leftMs < ANNOUNCE_UNIT_MS && this.retiring === undefined && this.#pending.at(-1) === res) {
      // onRetire makes `res` (the newest response, headers not yet out) carry the close.
      this.retire('age');
      if (!res.shouldKeepAlive) return;
    }
    let allowedMs = Math.max(0, leftMs);
    const serverMs = this.host.keepAliveTimeoutMs;
    if (serverMs !== undefined && serverMs > 0) allowedMs = Math.min(allowedMs, serverMs);
    const own = res.getHeader('keep-alive');
    const ownSeconds = typeof own === 'string' ? KEEP_ALIVE_TIMEOUT.exec(own)?.[1] : undefined;
    if (ownSeconds !== undefined) allowedMs = Math.min(allowedMs, Number(ownSeconds) * 1000);
    // Setting the header also stops Node from adding its own `Keep-Alive: timeout=<keepAliveTimeout>`.
    res.setHeader('keep-alive', `timeout=${Math.floor(allowedMs / ANNOUNCE_UNIT_MS)}`);
  }

  /** Makes `res` the connection's last response: `Connection: close`, then close the socket. */
  #closeAfter(res: http.ServerResponse): void {
    this.#closeQueued = true;
    // Read when the headers are written: Node then sends `Connection: close` and ends the socket.
    res.shouldKeepAlive = false;
    res.once('finish', () => {
      // Also when the application forced `Connection: keep-alive`: the decision stands.
      if (!this.socket.destroyed) this.socket.destroySoon();
    });
  }
}
