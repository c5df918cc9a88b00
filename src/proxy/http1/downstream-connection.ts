/**
 * One client connection on the proxy's HTTP/1.1 data path: the framing side. The proxy reads
 * the socket itself: each request head is parsed strictly (`parseRequestHead`), routed and
 * rewritten (`routeRequest`), and handed to the connection's `UpstreamExchange`, which takes an
 * attempt from the cluster, a socket from the proxy's one HTTP/1.1 pool and retries through the
 * cluster's one retry policy. Bodies are forwarded as the bytes arrive, in their original
 * framing (Content-Length or validated chunked), with backpressure both ways: a full socket
 * buffer pauses the other side. Requests are answered strictly in order; pipelined requests
 * wait in the buffer.
 *
 * Refused without forwarding a byte: malformed or smuggling-prone heads and chunked bodies
 * (400, connection closed), oversized heads (431), and what `routeRequest` refuses (CONNECT,
 * unknown hosts...). An upgrade request (WebSocket) goes to one picked endpoint; after its 101
 * the two sockets are spliced (`spliceUpgrade`). `Expect: 100-continue` is answered here. Requests
 * this path does not carry (HTTP/1.0, see `#begin`; `h2` clusters) hand the connection to the
 * listener's `node:http` server, bytes and all.
 *
 * Timeouts are checked by the listener's sweep (`check(nowMs)`), not by a timer per request:
 * head and whole-request deadlines (408), the keep-alive idle limit, the upstream's response
 * head (504) and body idle limits (the exchange's), and the downstream recycling age.
 */
import type { Socket } from 'node:net';
import type { LifetimePolicy } from '../../pool/lifetime-policy.js';
import { rawReply } from '../local-reply.js';
import { ChunkedScanner } from './chunked-scanner.js';
import type { Http1Context } from './http1-context.js';
import { isHeadError, named, parseRequestHead, type RequestHead } from './message-head.js';
import { routeRequest } from './request-route.js';
import { spliceUpgrade } from './upgrade-tunnel.js';
import { type ExchangeOwner, UpstreamExchange } from './upstream-exchange.js';

export type { AccessEntry, Http1Context } from './http1-context.js';

/** The interim answer to `Expect: 100-continue`. */
const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';
/** A recycled connection past its age closes once it has been quiet this long. */
const IDLE_CLOSE_DELAY_MS = 250;

const S_HEAD = 0;
const S_BODY = 1;
const S_WAIT = 2;
const S_CLOSED = 3;

export class Http1Downstream {
  readonly socket: Socket;
  readonly #ctx: Http1Context;
  readonly #client: { readonly address: string; readonly cert: string | undefined };
  readonly #exchange: UpstreamExchange;
  #state = S_HEAD;
  #buf: Buffer | undefined;
  #paused = false;
  /** Bumped on every client read and every finished response (the idle clock restarts). */
  #events = 0;
  /** Request heads parsed on this connection. */
  #heads = 0;
  /** What the sweep saw last, and since when. */
  readonly #timing = { events: 0, quietSinceMs: 0, headSeq: 0, headSinceMs: 0, bodySeq: 0, bodySinceMs: 0 };
  // ---- the current request ----
  #method = '';
  #path = '';
  /** When the request began (clock ms), read only for the access log. */
  #requestStartMs = 0;
  #bodyRemaining = 0;
  #scanner: ChunkedScanner | undefined;
  #closeAfter = false;
  // ---- recycling (`listeners[].recycle`) ----
  readonly #openedAtMs: number;
  readonly #maxAgeMs: number | undefined;
  /** Requests forwarded on this connection. */
  #requests = 0;
  /** Set by `retire()`: every later response carries `Connection: close`. */
  #retired = false;
  readonly #onData = (chunk: Buffer): void => this.#read(chunk);
  readonly #onEnd = (): void => this.#peerEnded();
  readonly #onClose = (): void => this.#closed();
  readonly #onError = (): void => {};

  constructor(socket: Socket, ctx: Http1Context) {
    this.socket = socket;
    this.#ctx = ctx;
    this.#client = { address: socket.remoteAddress ?? '', cert: ctx.clientCert(socket) };
    const now = ctx.clock.now();
    this.#openedAtMs = now;
    this.#timing.quietSinceMs = now;
    this.#maxAgeMs = ctx.recycle?.drawMaxAgeMs();
    this.#exchange = new UpstreamExchange(this.#owner());
    socket.on('data', this.#onData);
    socket.on('end', this.#onEnd);
    socket.on('close', this.#onClose);
    socket.on('error', this.#onError);
  }

  /** What the exchange may do to this connection (private state stays private). */
  #owner(): ExchangeOwner {
    return {
      socket: this.socket,
      closed: () => this.#state === S_CLOSED,
      bodyDone: () => this.#state !== S_BODY,
      closeAfter: () => this.#closeAfter,
      setCloseAfter: () => {
        this.#closeAfter = true;
      },
      paused: () => this.#paused,
      pauseClient: () => this.#pause(),
      resumeClient: () => this.#resumeReading(),
      answered: (status, reason) => this.#answered(status, reason),
      failRequest: (status, reason) => this.#failRequest(status, reason),
      next: () => this.#next(),
      cut: (reason) => {
        this.#answered(0, reason);
        this.#destroy();
      },
      abortAll: () => this.#abortAll(),
      upgraded: (conn, head, rest) => {
        this.#answered(101, undefined);
        this.#state = S_CLOSED;
        this.#detach();
        const early = this.#buf;
        this.#buf = undefined;
        spliceUpgrade(this.socket, conn.socket, head, this.#exchange.upgrade ?? '', rest, early);
        if (this.#paused) this.socket.resume();
      },
    };
  }

  /** Starts reading, with bytes already read from the socket (the protocol sniff). */
  start(initial: Buffer | undefined): void {
    if (initial !== undefined && initial.length > 0) this.#read(initial);
  }

  /** True between requests with nothing buffered (safe to close). */
  get idle(): boolean {
    return this.#state === S_HEAD && this.#buf === undefined;
  }

  /** Requests forwarded on this connection (fair-share shedding reads it). */
  get requests(): number {
    return this.#requests;
  }

  /** True while a request is being received or answered. */
  get busy(): boolean {
    return this.#state === S_BODY || this.#state === S_WAIT;
  }

  /**
   * Retires the connection at a response boundary, never while idle (the client may be writing
   * its next request): the response in progress carries `Connection: close` if its head is not
   * sent yet, else the next response does.
   */
  retire(): void {
    this.#retired = true;
    if (this.busy && !this.#exchange.responded) this.#closeAfter = true;
  }

  /** Closes now when idle, else after the current response. */
  closeSoon(): void {
    if (this.#state === S_CLOSED) return;
    if (this.idle) this.#end();
    else this.#closeAfter = true;
  }

  /**
   * Timeouts and recycling age; called by the listener's sweep. The hot path keeps counters
   * only (reads, requests); the sweep notes when each last changed, so deadlines are measured
   * to within one sweep interval without reading the clock per request.
   */
  check(nowMs: number): void {
    const t = this.#timing;
    if (t.events !== this.#events) {
      t.events = this.#events;
      t.quietSinceMs = nowMs;
    }
    const limits = this.#ctx.limits;
    switch (this.#state) {
      case S_HEAD:
        if (this.#buf !== undefined) {
          // A partial head of the next request: time it from when it was first seen.
          if (t.headSeq !== this.#heads + 1) {
            t.headSeq = this.#heads + 1;
            t.headSinceMs = nowMs;
          } else if (nowMs - t.headSinceMs >= limits.headersTimeoutMs) {
            this.#reject(408, 'request-timeout', true);
          }
        } else if (nowMs - t.quietSinceMs >= limits.idleTimeoutMs) {
          this.#end();
        } else if (
          this.#maxAgeMs !== undefined &&
          nowMs - this.#openedAtMs >= this.#maxAgeMs &&
          nowMs - t.quietSinceMs >= IDLE_CLOSE_DELAY_MS
        ) {
          this.#end();
        }
        return;
      case S_BODY:
      case S_WAIT:
        if (this.#state === S_BODY && limits.requestTimeoutMs > 0) {
          if (t.bodySeq !== this.#heads) {
            t.bodySeq = this.#heads;
            t.bodySinceMs = nowMs;
          } else if (nowMs - t.bodySinceMs >= limits.requestTimeoutMs) {
            if (this.#exchange.responded) this.#abortAll();
            else this.#failRequest(408, 'request-timeout');
            return;
          }
        }
        this.#exchange.check(nowMs);
        return;
      default:
        return;
    }
  }

  // ---- reading the client ----

  #read(chunk: Buffer): void {
    this.#events++;
    switch (this.#state) {
      case S_BODY:
        this.#body(chunk, 0);
        return;
      case S_HEAD:
        this.#buf = this.#buf === undefined ? chunk : Buffer.concat([this.#buf, chunk]);
        this.#parse();
        return;
      case S_WAIT:
        // Pipelined: keep it for later, but not without bound.
        this.#buf = this.#buf === undefined ? chunk : Buffer.concat([this.#buf, chunk]);
        if (this.#buf.length > this.#ctx.limits.maxHeaderBytes) this.#pause();
        return;
      default:
        return;
    }
  }

  #parse(): void {
    while (this.#state === S_HEAD && this.#buf !== undefined) {
      const buf = this.#buf;
      const limits = this.#ctx.limits;
      const head = parseRequestHead(buf, 0, limits.maxHeaderBytes, limits.maxHeaderCount);
      if (head === undefined) return;
      if (isHeadError(head)) {
        this.#reject(head.error, head.reason, true);
        return;
      }
      this.#heads++;
      this.#begin(head, buf);
    }
  }

  #begin(head: RequestHead, buf: Buffer): void {
    const ctx = this.#ctx;
    const rest = head.length < buf.length ? buf.subarray(head.length) : undefined;
    // Pipelined bytes stay buffered: a request refused below leaves the next one to parse.
    this.#buf = rest;
    if (head.minor === 0) {
      // HTTP/1.0 is node:http's: its response must be re-framed for the client (no chunked
      // coding, close-delimited unless the length is known, keep-alive only when asked for),
      // while this path forwards the upstream's framing as it is. The request still goes
      // through the cluster's attempts and the one socket pool (`ProxyCluster.forward`).
      this.#handoff(buf);
      return;
    }
    const hasBody = head.chunked || head.contentLength > 0;
    if (head.expect && !this.#expectation(head, hasBody)) return;
    this.#method = head.method;
    this.#closeAfter = head.close || this.#retired;
    this.#path = head.target;
    const route = routeRequest(head, hasBody, ctx, this.#client);
    if (route.type === 'reject') {
      this.#reject(route.status, route.reason, route.close);
      return;
    }
    if (route.type === 'handoff') {
      this.#handoff(buf);
      return;
    }
    this.#requestStartMs = ctx.state().accessLog ? ctx.clock.now() : 0;
    this.#path = route.path;
    this.#requests++;
    if (ctx.recycle !== undefined && this.#recycleNow()) this.#closeAfter = true;
    const exchange = this.#exchange;
    exchange.start(route, head.method, hasBody);
    if (head.expect && hasBody) this.socket.write(CONTINUE, 'latin1');
    if (hasBody) {
      this.#state = S_BODY;
      if (head.chunked) {
        this.#scanner = new ChunkedScanner(ctx.limits.maxHeaderBytes);
        this.#bodyRemaining = -1;
      } else {
        this.#scanner = undefined;
        this.#bodyRemaining = head.contentLength;
      }
      // Look at the body bytes already here before sending anything: a malformed chunked
      // body that came with its head is refused without the head reaching a backend.
      this.#buf = undefined;
      if (rest !== undefined) this.#body(rest, 0);
      if (this.#state === S_CLOSED) return;
    } else {
      this.#state = S_WAIT;
    }
    exchange.send();
  }

  /**
   * `Expect` (RFC 9110 §10.1.1): `100-continue` is answered here — the client may send its body
   * — once the request is routed (the upstream never sees the header); any other expectation
   * gets 417. False when the request was refused.
   */
  #expectation(head: RequestHead, hasBody: boolean): boolean {
    for (let i = 0; i < head.headers.length; i += 2) {
      const name = head.headers[i] as string;
      if (name.length !== 6 || !named(name, 'expect')) continue;
      if ((head.headers[i + 1] as string).trim().toLowerCase() === '100-continue') continue;
      this.#reject(417, 'expectation-failed', hasBody);
      return false;
    }
    return true;
  }

  /** Recycling: is the request just started the connection's last? */
  #recycleNow(): boolean {
    const policy = this.#ctx.recycle as LifetimePolicy;
    if (policy.isLastRequest(this.#requests)) return true;
    return this.#maxAgeMs !== undefined && this.#ctx.clock.now() - this.#openedAtMs >= this.#maxAgeMs;
  }

  #body(chunk: Buffer, from: number): void {
    const len = chunk.length;
    let end: number;
    let done: boolean;
    const scanner = this.#scanner;
    if (scanner === undefined) {
      const n = Math.min(this.#bodyRemaining, len - from);
      this.#bodyRemaining -= n;
      end = from + n;
      done = this.#bodyRemaining === 0;
    } else {
      end = scanner.scan(chunk, from, len);
      if (end < 0) {
        this.#malformedBody();
        return;
      }
      done = scanner.done;
    }
    if (end > from) this.#exchange.forward(from === 0 && end === len ? chunk : chunk.subarray(from, end));
    if (!done) return;
    this.#state = S_WAIT;
    this.#exchange.bodySent();
    if (end < len) {
      this.#buf = chunk.subarray(end);
      if (this.#buf.length > this.#ctx.limits.maxHeaderBytes) this.#pause();
    }
  }

  /** Stops reading the client; false when it was paused already. */
  #pause(): boolean {
    if (this.#paused) return false;
    this.#paused = true;
    this.socket.pause();
    return true;
  }

  #resumeReading(): void {
    if (!this.#paused || this.#state === S_CLOSED) return;
    this.#paused = false;
    this.socket.resume();
  }

  #malformedBody(): void {
    // Part of the body may have gone upstream: that request is lost, and so is the connection.
    if (this.#exchange.active) this.#exchange.abort('aborted');
    this.#reject(400, 'bad-request', true);
  }

  // ---- ending requests and the connection ----

  #answered(status: number, reason: string | undefined): void {
    const ctx = this.#ctx;
    ctx.metrics.observeDownstream(ctx.listener, status);
    if (ctx.state().accessLog) {
      ctx.access({
        client: this.#client.address,
        method: this.#method,
        path: this.#path,
        status,
        reason,
        startMs: this.#requestStartMs,
        cluster: this.#exchange.cluster?.name ?? '',
      });
    }
  }

  /** A local reply for the current request (nothing of a response was written yet). */
  #failRequest(status: number, reason: string): void {
    const close = this.#closeAfter || this.#state === S_BODY;
    this.#answered(status, reason);
    this.socket.write(rawReply(status, reason, close), 'latin1');
    if (close) this.#closeAfter = true;
    this.#next();
  }

  /** Refuses the request before anything went upstream; `close` ends the connection after. */
  #reject(status: number, reason: string, closeConnection: boolean): void {
    const close = closeConnection || this.#closeAfter;
    const ctx = this.#ctx;
    ctx.metrics.rejected(ctx.listener, reason);
    ctx.metrics.observeDownstream(ctx.listener, status);
    if (close) {
      this.#buf = undefined;
      this.#state = S_CLOSED;
      this.socket.end(rawReply(status, reason, true), 'latin1');
      this.socket.destroySoon();
      this.#release();
      return;
    }
    this.socket.write(rawReply(status, reason, false), 'latin1');
    this.#state = S_HEAD;
  }

  /** The exchange is over: next request, or close. */
  #next(): void {
    this.#events++;
    this.#exchange.reset();
    this.#scanner = undefined;
    if (this.#closeAfter || this.#state === S_BODY) {
      this.#end();
      return;
    }
    this.#state = S_HEAD;
    if (this.#paused) this.#resumeReading();
    if (this.#buf !== undefined) this.#parse();
  }

  #handoff(bytes: Buffer): void {
    this.#state = S_CLOSED;
    this.#detach();
    this.#ctx.handoff(this.socket, bytes);
  }

  #peerEnded(): void {
    // The client finished sending: answer what is in flight, then close. A request body cut
    // short can never complete: give up on it.
    if (this.#state === S_HEAD) this.#end();
    else if (this.#state === S_BODY) {
      this.#exchange.abort('aborted');
      this.#answered(0, 'client-closed');
      this.#destroy();
    } else this.#closeAfter = true;
  }

  #end(): void {
    if (this.#state === S_CLOSED) return;
    this.#state = S_CLOSED;
    this.socket.end();
    this.socket.destroySoon();
    this.#release();
  }

  #destroy(): void {
    this.#state = S_CLOSED;
    this.socket.destroy();
    this.#release();
  }

  #abortAll(): void {
    this.#exchange.abort('transport-error');
    this.#answered(0, 'timeout');
    this.#destroy();
  }

  #closed(): void {
    if (this.#exchange.active) {
      this.#exchange.abort('aborted');
      this.#answered(0, 'client-closed');
    }
    this.#state = S_CLOSED;
    this.#release();
  }

  #released = false;

  #release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#ctx.released(this);
  }

  #detach(): void {
    const s = this.socket;
    s.off('data', this.#onData);
    s.off('end', this.#onEnd);
    s.off('close', this.#onClose);
    s.off('error', this.#onError);
    this.#release();
  }
}
