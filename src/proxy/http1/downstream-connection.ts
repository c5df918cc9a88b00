/**
 * One client connection on the proxy's HTTP/1.1 data path: the reading side. Each request head
 * is parsed strictly (`parseRequestHead`), routed (`routeHttp1`, the one router) and handed to
 * the connection's `Http1Exchange`, answered through its `RawDownstreamSink`; bodies are
 * forwarded as they arrive, in their original framing, with backpressure both ways; pipelined
 * requests wait in the buffer and are answered in order. Malformed or smuggling-prone heads and
 * chunked bodies are refused (400/431, connection closed) without forwarding a byte; an upgrade
 * (WebSocket) is spliced after its 101; `Expect: 100-continue` is answered here; HTTP/1.0 and
 * requests for `h2` clusters hand the connection to node:http, bytes and all. Deadlines
 * (`DownstreamDeadlines`) are checked by the listener's sweep, not a timer per request.
 */
import type { Socket } from 'node:net';
import type { LifetimePolicy } from '../../pool/lifetime-policy.js';
import { LOCAL_REPLIES, type LocalReason, rawReply } from '../routing/local-reply.js';
import { DownstreamDeadlines } from './downstream-deadlines.js';
import type { Http1Context } from './http1-context.js';
import { isHeadError, parseRequestHead, type RequestHead } from './message-head.js';
import type { RawConnectionOwner, RawDownstreamSink } from './raw-downstream-sink.js';
import { recordAndSink } from './reported-request-record.js';
import { RequestBodyReader } from './request-body-reader.js';
import type { RequestRecord } from './request-record.js';
import { expectationMet, methodOfHead, routeHttp1 } from './request-route.js';
import { spliceUpgrade } from './upgrade-tunnel.js';
import { Http1Exchange } from './upstream-exchange.js';

/** The interim answer to `Expect: 100-continue`. */
const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';

const S_HEAD = 0;
const S_BODY = 1;
const S_WAIT = 2;
const S_CLOSED = 3;

export class Http1Downstream {
  readonly socket: Socket;
  readonly #ctx: Http1Context<Http1Downstream>;
  readonly #client: { readonly address: string; readonly cert: string | undefined };
  #released = false;
  readonly #exchange: Http1Exchange;
  #state = S_HEAD;
  #buf: Buffer | undefined;
  #paused = false;
  /** Bumped on every client read and every finished response (the idle clock restarts). */
  #events = 0;
  /** Request heads parsed on this connection. */
  #heads = 0;
  readonly #deadlines: DownstreamDeadlines;
  // ---- the current request ----
  readonly #record: RequestRecord;
  readonly #bodyReader = new RequestBodyReader();
  readonly #sink: RawDownstreamSink;
  #closeAfter = false;
  // ---- recycling (`listeners[].recycle`) ----
  /** Requests forwarded on this connection. */
  #requests = 0;
  /** Set by `retire()`: every later response carries `Connection: close`. */
  #retired = false;
  readonly #onData = (chunk: Buffer): void => this.#read(chunk);
  readonly #onEnd = (): void => this.#peerEnded();
  readonly #onClose = (): void => this.#closed();
  readonly #onError = (): void => {};

  constructor(socket: Socket, ctx: Http1Context<Http1Downstream>) {
    this.socket = socket;
    this.#ctx = ctx;
    this.#client = { address: socket.remoteAddress ?? '', cert: ctx.clientCert(socket) };
    this.#deadlines = new DownstreamDeadlines(ctx.limits, ctx.clock.now(), ctx.recycle?.drawMaxAgeMs());
    // With or without load reporting: chosen once per connection.
    ({ record: this.#record, sink: this.#sink } = recordAndSink(ctx, socket, this.#owner(), this.#client.address));
    this.#exchange = new Http1Exchange(this.#sink);
    this.#sink.resumeUpstream = this.#exchange.resumeUpstream;
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

  /** Retires the connection at a response boundary (`Connection: close` on the next head to go out), never while idle. */
  retire(): void {
    this.#retired = true;
    if (this.busy && !this.#sink.responded) this.#closeAfter = true;
  }

  /** Closes now when idle, else after the current response. */
  closeSoon(): void {
    if (this.#state === S_CLOSED) return;
    if (this.idle) this.#end();
    else this.#closeAfter = true;
  }

  /** Deadlines and recycling age, on the listener's sweep (see `DownstreamDeadlines`). */
  check(nowMs: number): void {
    const state = this.#state;
    if (state === S_CLOSED) return;
    const verdict = this.#deadlines.check(nowMs, {
      phase: state === S_HEAD ? 'head' : state === S_BODY ? 'body' : 'wait',
      partialHead: this.#buf !== undefined,
      events: this.#events,
      heads: this.#heads,
      paused: this.#paused,
    });
    switch (verdict) {
      case 'none':
        if (state !== S_HEAD) this.#exchange.check(nowMs);
        return;
      case 'request-head':
        this.#ctx.deadline('request-head');
        this.#reject('request-timeout', true, methodOfHead(this.#buf as Buffer));
        return;
      case 'idle':
        this.#ctx.deadline('idle');
        this.#end();
        return;
      case 'aged':
        this.#end();
        return;
      default:
        this.#bodyTimedOut(verdict);
    }
  }

  #bodyTimedOut(reason: 'request' | 'request-body'): void {
    this.#ctx.deadline(reason);
    this.#exchange.abort(this.#sink.responded ? 'transport-error' : 'aborted');
    if (!this.#sink.responded) this.#sink.reply('request-timeout');
    else this.#sink.cut('timeout');
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
        this.#reject(head.reason as LocalReason, true, methodOfHead(buf));
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
    this.#record.begin(head.method, head.target);
    this.#closeAfter = head.close || this.#retired;
    if (head.expect && !expectationMet(head)) {
      this.#reject('expectation-failed', hasBody, head.method);
      return;
    }
    const route = routeHttp1(head, hasBody, ctx, this.#client);
    if (route.type === 'reject') {
      this.#reject(route.reason, route.close, head.method);
      return;
    }
    if (route.type === 'handoff') {
      this.#handoff(buf);
      return;
    }
    this.#record.forwarded(route.path);
    this.#requests++;
    if (ctx.recycle !== undefined && this.#recycleNow()) this.#closeAfter = true;
    const exchange = this.#exchange;
    exchange.start(route);
    if (head.expect && hasBody) this.socket.write(CONTINUE, 'latin1');
    this.#sink.reset();
    if (hasBody) {
      this.#state = S_BODY;
      this.#bodyReader.start(head.chunked, head.contentLength, ctx.limits.maxHeaderBytes);
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

  /** Recycling: is the request just started the connection's last? */
  #recycleNow(): boolean {
    const policy = this.#ctx.recycle as LifetimePolicy;
    return policy.isLastRequest(this.#requests) || this.#deadlines.aged(this.#ctx.clock.now());
  }

  #body(chunk: Buffer, from: number): void {
    const len = chunk.length;
    const { end, done } = this.#bodyReader.read(chunk, from);
    if (end < 0) {
      // Part of the body may have gone upstream: that request is lost, and so is the connection.
      if (this.#exchange.active) this.#exchange.abort('aborted');
      this.#reject('bad-request', true, this.#record.method);
      return;
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

  /** What the response side (`RawDownstreamSink`) may do to this connection (private state stays private). */
  #owner(): RawConnectionOwner {
    return {
      closed: () => this.#state === S_CLOSED,
      readingBody: () => this.#state === S_BODY,
      method: () => this.#record.method,
      closeAfter: () => this.#closeAfter,
      setCloseAfter: () => {
        this.#closeAfter = true;
      },
      pause: () => this.#pause(),
      resume: () => this.#resume(),
      paused: () => this.#paused,
      answered: (status, reason) => this.#answered(status, reason),
      next: () => this.#next(),
      destroy: () => this.#destroy(),
      upgraded: (conn, head, rest) => {
        const requested = this.#exchange.upgrade ?? '';
        this.#state = S_CLOSED;
        this.#detach();
        const early = this.#buf;
        this.#buf = undefined;
        spliceUpgrade(this.socket, conn, head, requested, rest, early);
        if (this.#paused) this.socket.resume();
      },
    };
  }

  /** Stops reading the client; false when it was paused already. */
  #pause(): boolean {
    if (this.#paused) return false;
    this.#paused = true;
    this.socket.pause();
    return true;
  }

  #resume(): void {
    if (!this.#paused || this.#state === S_CLOSED) return;
    this.#paused = false;
    this.socket.resume();
  }

  // ---- ending requests and the connection ----

  #answered(status: number, reason: string | undefined): void {
    this.#record.answered(status, reason, this.#exchange.cluster?.name ?? '');
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
    this.#bodyReader.clear();
    if (this.#closeAfter || this.#state === S_BODY) {
      this.#end();
      return;
    }
    this.#state = S_HEAD;
    if (this.#paused) this.#resume();
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

  #closed(): void {
    if (this.#exchange.active) {
      this.#exchange.abort('aborted');
      this.#answered(0, 'client-closed');
    }
    this.#state = S_CLOSED;
    this.#release();
  }

  #release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#record.close();
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
