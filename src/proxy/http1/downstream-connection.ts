/**
 * One client connection on the proxy's HTTP/1.1 data path: the framing side. The proxy reads
 * the socket itself: each request head is parsed strictly (`parseRequestHead`), routed by the
 * one router (`routeHttp1`), and handed to the connection's `Http1Exchange` — the one HTTP/1.1
 * upstream exchange, for which this connection is the `DownstreamSink` writing raw bytes.
 * Bodies are forwarded as the bytes arrive, in their original framing (Content-Length or
 * validated chunked), with backpressure both ways. Requests are answered strictly in order;
 * pipelined requests wait in the buffer.
 *
 * Refused without forwarding a byte: malformed or smuggling-prone heads and chunked bodies
 * (400, connection closed), oversized heads (431), and what the router refuses. Every local
 * reply follows HTTP semantics (no body for HEAD; `Connection: close` and a close when the
 * connection cannot be reused). An upgrade request (WebSocket) goes to one picked endpoint;
 * after its 101 the two sockets are spliced. `Expect: 100-continue` is answered here. Requests
 * this path does not carry (HTTP/1.0, `h2` clusters) hand the connection to the listener's
 * `node:http` server, bytes and all.
 *
 * Deadlines are checked by the listener's sweep (`check(nowMs)`), not by a timer per request:
 * the request head (`headersTimeoutMs`, 408), each read of a request body (`bodyReadTimeoutMs`)
 * and the whole request (`requestTimeoutMs`), the keep-alive idle limit, the exchange's upstream
 * deadlines, and the downstream recycling age. Each close by a deadline is counted by reason.
 */
import type { Socket } from 'node:net';
import type { LifetimePolicy } from '../../pool/lifetime-policy.js';
import { LOCAL_REPLIES, type LocalReason, rawReply } from '../local-reply.js';
import { ChunkedScanner } from './chunked-scanner.js';
import type { Http1Context } from './http1-context.js';
import { isHeadError, named, parseRequestHead, type RequestHead, type ResponseHead } from './message-head.js';
import { routeHttp1 } from './request-route.js';
import { responseHeadBytes } from './response-head-bytes.js';
import { spliceUpgrade } from './upgrade-tunnel.js';
import { type DownstreamSink, Http1Exchange } from './upstream-exchange.js';
import type { UpstreamConnection } from './upstream-pool.js';

export type { AccessEntry, Http1Context } from './http1-context.js';

/** The interim answer to `Expect: 100-continue`. */
const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';
/** A recycled connection past its age closes once it has been quiet this long. */
const IDLE_CLOSE_DELAY_MS = 250;
/** Response bodies up to this size leave in the same write as their head. */
const COALESCE_BYTES = 16 * 1024;

const S_HEAD = 0;
const S_BODY = 1;
const S_WAIT = 2;
const S_CLOSED = 3;

/** The method of a request whose head was refused as malformed (a HEAD still gets no body). */
function methodOf(buf: Buffer): string {
  return buf.length >= 5 && buf.toString('latin1', 0, 5) === 'HEAD ' ? 'HEAD' : 'GET';
}

export class Http1Downstream implements DownstreamSink {
  readonly socket: Socket;
  readonly decoded = false;
  readonly #ctx: Http1Context;
  readonly #client: { readonly address: string; readonly cert: string | undefined };
  readonly #exchange: Http1Exchange;
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
  /** A response head held until its first body bytes (or the end): a small response leaves in one write. */
  #headOut: string | undefined;
  /** Something of the current response was written. */
  #responded = false;
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
    this.#exchange = new Http1Exchange(this);
    socket.on('data', this.#onData);
    socket.on('end', this.#onEnd);
    socket.on('close', this.#onClose);
    socket.on('error', this.#onError);
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
    if (this.busy && !this.#responded) this.#closeAfter = true;
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
            this.#ctx.deadline('request-head');
            this.#reject('request-timeout', true, methodOf(this.#buf));
          }
        } else if (nowMs - t.quietSinceMs >= limits.idleTimeoutMs) {
          this.#ctx.deadline('idle');
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
        if (t.bodySeq !== this.#heads) {
          t.bodySeq = this.#heads;
          t.bodySinceMs = nowMs;
        } else if (limits.requestTimeoutMs > 0 && nowMs - t.bodySinceMs >= limits.requestTimeoutMs) {
          this.#bodyTimedOut('request');
          return;
        }
        // A client the proxy paused (backpressure) is not stalling.
        if (!this.#paused && limits.bodyReadTimeoutMs > 0 && nowMs - t.quietSinceMs >= limits.bodyReadTimeoutMs) {
          this.#bodyTimedOut('request-body');
          return;
        }
        this.#exchange.check(nowMs);
        return;
      case S_WAIT:
        this.#exchange.check(nowMs);
        return;
      default:
        return;
    }
  }

  #bodyTimedOut(reason: 'request' | 'request-body'): void {
    this.#ctx.deadline(reason);
    if (this.#responded) this.#abortAll();
    else {
      this.#exchange.abort('aborted');
      this.reply('request-timeout');
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
        if (this.#buf.length > this.#ctx.limits.maxHeaderBytes) this.pauseBody();
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
        this.#reject(head.reason as LocalReason, true, methodOf(buf));
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
      // coding, close-delimited unless the length is known, keep-alive only when asked for).
      // The request still goes through the one exchange and the one socket pool.
      this.#handoff(buf);
      return;
    }
    const hasBody = head.chunked || head.contentLength > 0;
    this.#method = head.method;
    this.#closeAfter = head.close || this.#retired;
    this.#path = head.target;
    if (head.expect && !this.#expectation(head, hasBody)) return;
    const route = routeHttp1(head, hasBody, ctx, this.#client);
    if (route.type === 'reject') {
      this.#reject(route.reason, route.close, head.method);
      return;
    }
    if (route.type === 'handoff') {
      this.#handoff(buf);
      return;
    }
    this.#requestStartMs = ctx.state().accessLog ? ctx.clock.now() : 0;
    this.#path = route.path;
    this.#requests++;
    this.#responded = false;
    if (ctx.recycle !== undefined && this.#recycleNow()) this.#closeAfter = true;
    const exchange = this.#exchange;
    exchange.start(route);
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
      this.#reject('expectation-failed', hasBody, head.method);
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
        // Part of the body may have gone upstream: that request is lost, and so is the connection.
        if (this.#exchange.active) this.#exchange.abort('aborted');
        this.#reject('bad-request', true, this.#method);
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
      if (this.#buf.length > this.#ctx.limits.maxHeaderBytes) this.pauseBody();
    }
  }

  // ---- DownstreamSink: what the exchange writes ----

  closed(): boolean {
    return this.#state === S_CLOSED;
  }

  bodyDone(): boolean {
    return this.#state !== S_BODY;
  }

  bodyPaused(): boolean {
    return this.#paused;
  }

  /** Stops reading the client; false when it was paused already. */
  pauseBody(): boolean {
    if (this.#paused) return false;
    this.#paused = true;
    this.socket.pause();
    return true;
  }

  resumeBody(): void {
    if (!this.#paused || this.#state === S_CLOSED) return;
    this.#paused = false;
    this.socket.resume();
  }

  head(head: ResponseHead): void {
    // A response before the whole request arrived: the rest of the request cannot be read.
    if (this.#state === S_BODY) this.#closeAfter = true;
    const out = responseHeadBytes(head, this.#method, this.#closeAfter);
    if (out.close) this.#closeAfter = true;
    this.#responded = true;
    this.#headOut = out.text;
  }

  started(): boolean {
    return this.#responded && this.#headOut === undefined;
  }

  body(chunk: Buffer): boolean {
    const client = this.socket;
    let ok: boolean;
    const head = this.#headOut;
    if (head === undefined) ok = client.write(chunk);
    else {
      this.#headOut = undefined;
      if (chunk.length <= COALESCE_BYTES) {
        const out = Buffer.allocUnsafe(head.length + chunk.length);
        out.write(head, 0, 'latin1');
        chunk.copy(out, head.length);
        ok = client.write(out);
      } else {
        client.write(head, 'latin1');
        ok = client.write(chunk);
      }
    }
    if (!ok) client.once('drain', this.#exchange.resumeUpstream);
    return ok;
  }

  flush(): void {
    const head = this.#headOut;
    if (head !== undefined) {
      this.#headOut = undefined;
      this.socket.write(head, 'latin1');
    }
  }

  end(status: number): void {
    this.#answered(status, undefined);
    this.#next();
  }

  /** A local reply for the current request (nothing of a response was written yet). */
  reply(reason: LocalReason): void {
    // A response head held back (no body byte went out) is replaced by the reply.
    this.#headOut = undefined;
    const close = this.#closeAfter || this.#state === S_BODY || LOCAL_REPLIES[reason].closes;
    this.#answered(LOCAL_REPLIES[reason].status, reason);
    this.socket.write(rawReply(reason, this.#method, close), 'latin1');
    if (close) this.#closeAfter = true;
    this.#next();
  }

  cut(reason: 'upstream-cut' | 'timeout'): void {
    this.#answered(0, reason);
    this.#destroy();
  }

  upgraded(conn: UpstreamConnection, head: ResponseHead, rest: Buffer): void {
    this.#answered(101, undefined);
    const requested = this.#exchange.upgrade ?? '';
    this.#state = S_CLOSED;
    this.#detach();
    const early = this.#buf;
    this.#buf = undefined;
    spliceUpgrade(this.socket, conn.socket, head, requested, rest, early);
    if (this.#paused) this.socket.resume();
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

  /** Refuses the request before anything went upstream; `closeConnection` ends the connection after. */
  #reject(reason: LocalReason, closeConnection: boolean, method: string): void {
    const close = closeConnection || this.#closeAfter;
    const ctx = this.#ctx;
    ctx.metrics.rejected(ctx.listener, reason);
    ctx.metrics.observeDownstream(ctx.listener, LOCAL_REPLIES[reason].status);
    if (close) {
      this.#buf = undefined;
      this.#state = S_CLOSED;
      this.socket.end(rawReply(reason, method, true), 'latin1');
      this.socket.destroySoon();
      this.#release();
      return;
    }
    this.socket.write(rawReply(reason, method, false), 'latin1');
    this.#state = S_HEAD;
  }

  /** The exchange is over: next request, or close. */
  #next(): void {
    this.#events++;
    this.#exchange.reset();
    this.#scanner = undefined;
    this.#headOut = undefined;
    if (this.#closeAfter || this.#state === S_BODY) {
      this.#end();
      return;
    }
    this.#state = S_HEAD;
    if (this.#paused) this.resumeBody();
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
