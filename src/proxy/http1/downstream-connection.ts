/**
 * One client connection on the proxy's HTTP/1.1 data path. The proxy reads the socket itself:
 * each request head is parsed strictly (`parseRequestHead`), routed, rewritten (hop-by-hop
 * headers out, `X-Forwarded-*` and `Via` in), balanced with one pick from the cluster
 * (`Cluster.acquire`, the same balancer, load records and outlier detection every transport
 * uses) and written to a keep-alive socket of the picked endpoint (`Http1EndpointPool`).
 * Bodies are forwarded as the bytes arrive, in their original framing (Content-Length or
 * validated chunked), with backpressure both ways: a full socket buffer pauses the other side.
 * Requests are answered strictly in order; pipelined requests wait in the buffer.
 *
 * Refused without forwarding a byte: malformed or smuggling-prone heads and chunked bodies
 * (400, connection closed), oversized heads (431), CONNECT (405), hosts no route serves
 * (404). An upgrade request (WebSocket) goes to one picked endpoint; after its 101 the two
 * sockets are spliced and carry the new protocol both ways. A connect failure is retried once on another endpoint; a
 * bodiless idempotent request whose reused socket failed before any response byte, or that
 * got 502/503/504 while `retries.idempotent` allows, is retried elsewhere. Requests this path
 * does not carry (HTTP/1.0, `Expect`, clusters reached over HTTP/2) hand the connection to the
 * listener's `node:http` server, bytes and all.
 *
 * Timeouts are checked by the listener's sweep (`check(nowMs)`), not by a timer per request:
 * head and whole-request deadlines (408), the keep-alive idle limit, the upstream's response
 * head (504) and body idle limits, and the downstream recycling age.
 */
import type { Socket } from 'node:net';
import type { RequestTicket } from '../../cluster/cluster.js';
import { IDEMPOTENT, RETRY_STATUS } from '../../cluster/routed-request.js';
import type { Clock } from '../../core/clock.js';
import { EvenlbError } from '../../core/errors.js';
import type { ProxyMetrics } from '../../metrics/proxy-metrics.js';
import type { LifetimePolicy } from '../../pool/lifetime-policy.js';
import type { ListenerLimits } from '../config-schema.js';
import { downstreamRawHeaders, requestFraming, serializeHeaders, upstreamRequestHeaders } from '../hop-headers.js';
import type { L7State } from '../l7-listener.js';
import { rawReply, statusForError } from '../local-reply.js';
import type { ProxyCluster } from '../proxy-cluster.js';
import { isValidHost, splitRequestTarget } from '../route-table.js';
import { ChunkedScanner } from './chunked-scanner.js';
import { isHeadError, named, parseRequestHead, type RequestHead, type ResponseHead } from './message-head.js';
import type { Http1Upstream, ResponseSink, UpstreamConnection } from './upstream-pool.js';

/** What a downstream connection needs from its listener. */
export interface Http1Context {
  readonly listener: string;
  readonly proto: 'http' | 'https';
  readonly limits: ListenerLimits;
  /** `listeners[].trustForwardedHeaders`: keep the client's forwarding headers. */
  readonly trustForwarded: boolean;
  readonly metrics: ProxyMetrics;
  readonly clock: Clock;
  /** Downstream recycling (`listeners[].recycle`); undefined = connections live on. */
  readonly recycle: LifetimePolicy | undefined;
  state(): L7State;
  /** `X-Forwarded-Client-Cert` for the socket's verified client certificate, if any. */
  clientCert(socket: Socket): string | undefined;
  /** Gives the socket (and the bytes read but not handled) to the listener's `node:http` server. */
  handoff(socket: Socket, pending: Buffer | undefined): void;
  /** Writes an access-log line (called only when the access log is on). */
  access(entry: AccessEntry): void;
  /** The connection is done with this data path (closed or handed off). */
  released(conn: Http1Downstream): void;
}

export interface AccessEntry {
  readonly client: string | undefined;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly reason: string | undefined;
  readonly startMs: number;
  readonly cluster: string;
}

/** Request body bytes held while the upstream socket connects before the client is paused. */
const MAX_PENDING_BODY_BYTES = 64 * 1024;
/** Response bodies up to this size leave in the same write as their head. */
const COALESCE_BYTES = 16 * 1024;
/** A recycled connection past its age closes once it has been quiet this long. */
const IDLE_CLOSE_DELAY_MS = 250;

const S_HEAD = 0;
const S_BODY = 1;
const S_WAIT = 2;
const S_CLOSED = 3;

export class Http1Downstream implements ResponseSink {
  readonly socket: Socket;
  readonly #ctx: Http1Context;
  readonly #clientAddress: string;
  readonly #clientCert: string | undefined;
  readonly #openedAtMs: number;
  readonly #maxAgeMs: number | undefined;
  #requests = 0;
  #state = S_HEAD;
  #buf: Buffer | undefined;
  #paused = false;
  /** Bumped on every client read and every finished response (the idle clock restarts). */
  #events = 0;
  /** Request heads parsed on this connection. */
  #heads = 0;
  /** Upstream attempts (a retry is a new attempt) and upstream reads, for the sweep. */
  #attempts = 0;
  #upReads = 0;
  /** What the sweep saw last, and since when. */
  readonly #timing = {
    events: 0,
    quietSinceMs: 0,
    headSeq: 0,
    headSinceMs: 0,
    bodySeq: 0,
    bodySinceMs: 0,
    attempt: 0,
    attemptSinceMs: 0,
    upReads: 0,
    upQuietSinceMs: 0,
  };
  // ---- the current request ----
  #method = '';
  #path = '';
  #cluster: ProxyCluster | undefined;
  #upstream: Http1Upstream | undefined;
  /** The TLS server name for the upstream socket ('' for plain HTTP). */
  #servername = '';
  #ticket: RequestTicket | undefined;
  #conn: UpstreamConnection | undefined;
  #upHead = '';
  /** The protocols an upgrade request asks for (WebSocket...); undefined for plain requests. */
  #upgrade: string | undefined;
  /** When the request began (clock ms), read only for the access log. */
  #requestStartMs = 0;
  #bodyRemaining = 0;
  #scanner: ChunkedScanner | undefined;
  #hasBody = false;
  #pendingBody: Buffer[] | undefined;
  #pendingBytes = 0;
  #closeAfter = false;
  /** Set by `retire()`: every later response carries `Connection: close`. */
  #retired = false;
  #status = 0;
  #responded = false;
  /** A response head not written yet (see `onResponseHead`). */
  #headOut: string | undefined;
  #swallow = false;
  #connectRetried = false;
  #idempotentRetries = 0;
  #exclude: string | undefined;
  /** The endpoint of the attempt ended last: a retry goes elsewhere even after its ticket ended. */
  #lastEndpoint: string | undefined;
  readonly #onData = (chunk: Buffer): void => this.#read(chunk);
  readonly #onEnd = (): void => this.#peerEnded();
  readonly #onClose = (): void => this.#closed();
  readonly #onError = (): void => {};
  readonly #resumeSelf = (): void => this.#resumeReading();
  readonly #resumeUpstream = (): void => {
    this.#conn?.socket.resume();
  };

  constructor(socket: Socket, ctx: Http1Context) {
    this.socket = socket;
    this.#ctx = ctx;
    this.#clientAddress = socket.remoteAddress ?? '';
    this.#clientCert = ctx.clientCert(socket);
    const now = ctx.clock.now();
    this.#openedAtMs = now;
    this.#timing.quietSinceMs = now;
    this.#maxAgeMs = ctx.recycle?.drawMaxAgeMs();
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
   * only (reads, requests, upstream attempts, upstream reads); the sweep notes when each last
   * changed, so deadlines are measured to within one sweep interval without reading the
   * clock per request.
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
      case S_WAIT: {
        if (this.#state === S_BODY && limits.requestTimeoutMs > 0) {
          if (t.bodySeq !== this.#heads) {
            t.bodySeq = this.#heads;
            t.bodySinceMs = nowMs;
          } else if (nowMs - t.bodySinceMs >= limits.requestTimeoutMs) {
            if (this.#responded) this.#abortAll();
            else this.#failRequest(408, 'request-timeout');
            return;
          }
        }
        const cfg = this.#cluster?.config;
        if (cfg === undefined || this.#conn === undefined) return;
        if (t.attempt !== this.#attempts) {
          t.attempt = this.#attempts;
          t.attemptSinceMs = nowMs;
        }
        if (t.upReads !== this.#upReads) {
          t.upReads = this.#upReads;
          t.upQuietSinceMs = nowMs;
        }
        if (!this.#responded) {
          if (cfg.requestTimeoutMs > 0 && nowMs - t.attemptSinceMs >= cfg.requestTimeoutMs) {
            this.#upstreamFailed(new EvenlbError('EVENLB_TIMEOUT', 'upstream sent no response head in time'), false);
          }
        } else if (cfg.bodyTimeoutMs > 0 && nowMs - t.upQuietSinceMs >= cfg.bodyTimeoutMs) {
          this.#abortAll();
        }
        return;
      }
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
        if (this.#buf.length > this.#ctx.limits.maxHeaderBytes && !this.#paused) {
          this.#paused = true;
          this.socket.pause();
        }
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
    if (head.minor === 0 || head.expect) {
      // HTTP/1.0 framing and `100-continue` are node:http's job.
      this.#handoff(buf);
      return;
    }
    const method = head.method;
    this.#method = method;
    this.#hasBody = head.chunked || head.contentLength > 0;
    this.#closeAfter = head.close || this.#retired;
    this.#path = head.target;
    if (method === 'CONNECT') {
      this.#reject(405, 'method-not-allowed', true);
      return;
    }
    // Protocol upgrades (WebSocket) are tunnelled after the upstream's 101; an `h2c` upgrade
    // is declined by ignoring it (RFC 9113 §3.1 leaves that to the server), as is an upgrade
    // with a body.
    let upgrade = head.upgrade;
    if (upgrade !== undefined && /(^|[\s,])h2c([\s,]|$)/i.test(upgrade)) upgrade = undefined;
    if (upgrade !== undefined && this.#hasBody) {
      this.#reject(400, 'bad-request', true);
      return;
    }
    this.#upgrade = upgrade;
    const target = splitRequestTarget(head.target, head.host);
    if (target === undefined) {
      this.#reject(400, 'bad-request-target', true);
      return;
    }
    if (
      (target.host !== undefined && !isValidHost(target.host)) ||
      (head.host !== undefined && !isValidHost(head.host))
    ) {
      this.#reject(400, 'bad-host', true);
      return;
    }
    const state = ctx.state();
    this.#requestStartMs = state.accessLog ? ctx.clock.now() : 0;
    const match = state.routes.match(target.host, target.path, target.absolute);
    if (match === undefined) {
      this.#reject(404, 'no-route', this.#hasBody);
      return;
    }
    const cluster = match.cluster;
    const upstream = cluster.h1;
    if (upstream === undefined) {
      if (upgrade !== undefined) {
        this.#reject(501, 'upgrade-not-supported', true);
        return;
      }
      this.#handoff(buf);
      return;
    }
    const unavailable = cluster.unavailableReason();
    if (unavailable !== undefined) {
      this.#reject(503, unavailable, this.#hasBody);
      return;
    }
    this.#requests++;
    if (this.#ctx.recycle !== undefined && this.#recycleNow()) this.#closeAfter = true;
    this.#cluster = cluster;
    this.#upstream = upstream;
    this.#servername = cluster.servernameFor(target.host);
    this.#path = target.path;
    const headers = upstreamRequestHeaders(head.headers, {
      clientAddress: this.#clientAddress,
      proto: ctx.proto,
      host: target.host ?? '',
      version: '1.1',
      hostRewrite: cluster.config.hostRewrite,
      clientCert: this.#clientCert,
      trustForwarded: ctx.trustForwarded,
    });
    // The framing is the proxy's own, from what it parsed: never a header copied from the client.
    this.#upHead = `${method} ${target.path} HTTP/1.1\r\n${serializeHeaders(headers)}${requestFraming(head.chunked, head.contentLength)}${upgrade === undefined ? '' : `connection: upgrade\r\nupgrade: ${upgrade}\r\n`}\r\n`;
    this.#status = 0;
    this.#responded = false;
    this.#swallow = false;
    this.#connectRetried = false;
    this.#idempotentRetries = 0;
    this.#exclude = undefined;
    if (this.#hasBody) {
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
    this.#dispatch();
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
    if (end > from) this.#forward(from === 0 && end === len ? chunk : chunk.subarray(from, end));
    if (!done) return;
    this.#state = S_WAIT;
    if (this.#conn !== undefined && this.#pendingBody === undefined) this.#conn.requestSent = true;
    if (end < len) {
      this.#buf = chunk.subarray(end);
      if (this.#buf.length > this.#ctx.limits.maxHeaderBytes && !this.#paused) {
        this.#paused = true;
        this.socket.pause();
      }
    }
  }

  /** Request body bytes to the upstream, or held until its socket is connected. */
  #forward(part: Buffer): void {
    const conn = this.#conn;
    if (conn === undefined || this.#pendingBody !== undefined) {
      if (this.#pendingBody === undefined) this.#pendingBody = [];
      this.#pendingBody.push(part);
      this.#pendingBytes += part.length;
      if (this.#pendingBytes > MAX_PENDING_BODY_BYTES && !this.#paused) {
        this.#paused = true;
        this.socket.pause();
      }
      return;
    }
    if (!conn.socket.write(part) && !this.#paused) {
      this.#paused = true;
      this.socket.pause();
      conn.socket.once('drain', this.#resumeSelf);
    }
  }

  #resumeReading(): void {
    if (!this.#paused || this.#state === S_CLOSED) return;
    this.#paused = false;
    this.socket.resume();
  }

  #malformedBody(): void {
    if (this.#ticket !== undefined || this.#conn !== undefined) {
      // Part of the body already went upstream: that request is lost, and so is the connection.
      this.#abortUpstream('aborted');
    }
    this.#reject(400, 'bad-request', true);
  }

  // ---- sending upstream ----

  #dispatch(): void {
    const cluster = this.#cluster as ProxyCluster;
    const ticket = cluster.cluster.acquire(this.#exclude);
    if (ticket instanceof EvenlbError) {
      const { status, reason } = statusForError(ticket);
      this.#failRequest(status, reason);
      return;
    }
    this.#ticket = ticket;
    const conn = (this.#upstream as Http1Upstream).pool(ticket.endpoint, this.#servername).acquire(this);
    if (conn !== undefined) this.#attach(conn);
  }

  onConnection(conn: UpstreamConnection | Error): void {
    if (this.#state === S_CLOSED || this.#ticket === undefined) {
      if (!(conn instanceof Error)) conn.pool.release(conn, true);
      return;
    }
    if (conn instanceof Error) {
      this.#upstreamFailed(conn, false, true);
      return;
    }
    this.#attach(conn);
  }

  #attach(conn: UpstreamConnection): void {
    this.#conn = conn;
    this.#attempts++;
    const socket = conn.socket;
    const pending = this.#pendingBody;
    if (pending === undefined) {
      conn.send(this, this.#upHead, this.#method === 'HEAD', this.#upgrade !== undefined);
    } else {
      socket.cork();
      conn.send(this, this.#upHead, this.#method === 'HEAD', this.#upgrade !== undefined);
      this.#pendingBody = undefined;
      this.#pendingBytes = 0;
      let ok = true;
      for (const part of pending) ok = socket.write(part);
      socket.uncork();
      if (this.#paused && ok) this.#resumeReading();
      else if (!ok && !this.#paused) {
        this.#paused = true;
        this.socket.pause();
      }
      if (!ok) socket.once('drain', this.#resumeSelf);
    }
    if (this.#state !== S_BODY) conn.requestSent = true;
  }

  // ---- the response (ResponseSink) ----

  onResponseHead(head: ResponseHead): void {
    this.#responded = true;
    this.#upReads++;
    if (RETRY_STATUS.has(head.status) && this.#mayRetryIdempotent()) {
      this.#status = head.status;
      this.#swallow = true;
      return;
    }
    this.#status = head.status;
    // The framing the client sees is written here from what the parser decided, never copied:
    // one Content-Length, or chunked, or no length and the connection closes after the body.
    let extra = '';
    const status = head.status;
    if (status === 204 || status < 200) {
      // no body and no framing header
    } else if (head.chunked) {
      extra = `transfer-encoding: ${head.transferEncoding}\r\n`;
    } else if (head.transferEncoding === undefined && head.contentLength >= 0) {
      extra = `content-length: ${head.contentLength}\r\n`;
    } else if (!this.#bodyless(status)) {
      // Ends when the upstream closes: so must the client connection.
      this.#closeAfter = true;
    }
    // A response before the whole request arrived: the rest of the request cannot be read.
    if (this.#state === S_BODY) this.#closeAfter = true;
    if (this.#closeAfter) extra += 'connection: close\r\n';
    const list = downstreamRawHeaders(head.headers, '1.1');
    // Held until the first body bytes (or the end): a small response leaves in one write.
    this.#headOut = `HTTP/1.1 ${head.status} ${head.statusText}\r\n${serializeHeaders(list)}${extra}\r\n`;
  }

  onUpgrade(conn: UpstreamConnection, head: ResponseHead, rest: Buffer): void {
    const up = conn.socket;
    const client = this.socket;
    this.#conn = undefined;
    this.#responded = true;
    this.#status = 101;
    this.#endTicket('success');
    this.#answered(101, undefined);
    let protocol = this.#upgrade as string;
    for (let i = 0; i < head.headers.length; i += 2) {
      const name = head.headers[i] as string;
      if (name.length === 7 && named(name, 'upgrade')) protocol = head.headers[i + 1] as string;
    }
    const list = downstreamRawHeaders(head.headers, '1.1');
    const out = `HTTP/1.1 101 ${head.statusText}\r\n${serializeHeaders(list)}connection: upgrade\r\nupgrade: ${protocol}\r\n\r\n`;
    // From here on both sockets carry the upgraded protocol: splice them, with backpressure.
    this.#state = S_CLOSED;
    this.#detach();
    client.on('error', () => {});
    client.write(out, 'latin1');
    if (rest.length > 0) client.write(rest);
    const early = this.#buf;
    this.#buf = undefined;
    if (early !== undefined) up.write(early);
    const teardown = (): void => {
      client.destroy();
      up.destroy();
    };
    client.once('close', teardown);
    up.once('close', teardown);
    client.pipe(up);
    up.pipe(client);
    if (this.#paused) client.resume();
  }

  #bodyless(status: number): boolean {
    return this.#method === 'HEAD' || status === 204 || status === 304;
  }

  onResponseBody(chunk: Buffer): void {
    if (this.#swallow) return;
    this.#upReads++;
    let ok: boolean;
    const head = this.#headOut;
    if (head === undefined) ok = this.socket.write(chunk);
    else {
      this.#headOut = undefined;
      if (chunk.length <= COALESCE_BYTES) {
        const out = Buffer.allocUnsafe(head.length + chunk.length);
        out.write(head, 0, 'latin1');
        chunk.copy(out, head.length);
        ok = this.socket.write(out);
      } else {
        this.socket.write(head, 'latin1');
        ok = this.socket.write(chunk);
      }
    }
    if (!ok) {
      const conn = this.#conn;
      if (conn !== undefined) {
        conn.socket.pause();
        this.socket.once('drain', this.#resumeUpstream);
      }
    }
  }

  flush(): void {
    const head = this.#headOut;
    if (head !== undefined) {
      this.#headOut = undefined;
      this.socket.write(head, 'latin1');
    }
  }

  onResponseEnd(): void {
    this.#conn = undefined;
    if (this.#swallow) {
      this.#swallow = false;
      this.#endTicket('http-error');
      this.#idempotentRetries++;
      if (this.#retryElsewhere()) return;
      this.#failRequest(502, 'upstream-error');
      return;
    }
    const status = this.#status;
    this.#endTicket(status >= 500 ? 'http-error' : 'success');
    this.#answered(status, undefined);
    this.#next();
  }

  onUpstreamError(err: Error, responded: boolean): void {
    this.#upstreamFailed(err, responded);
  }

  #upstreamFailed(err: Error, responded: boolean, connectFailure = false): void {
    const conn = this.#conn;
    this.#conn = undefined;
    if (conn !== undefined && !conn.closed) conn.abort('error');
    // A response head still held (no body byte was forwarded) was never sent: the client gets
    // a 502 instead of a cut connection.
    const held = this.#headOut !== undefined;
    this.#headOut = undefined;
    this.#endTicket(connectFailure ? 'connect-failure' : 'transport-error');
    if (this.#state === S_CLOSED) return;
    const headSent = this.#responded && !this.#swallow && !held;
    if (headSent) {
      // The client has part of a response: all that can be done is to cut it.
      this.#answered(0, 'upstream-error');
      this.#destroy();
      return;
    }
    if (connectFailure && !this.#connectRetried) {
      this.#connectRetried = true;
      if (this.#retryElsewhere()) return;
    } else if (
      !responded &&
      ((conn?.reused === true && !this.#hasBody && IDEMPOTENT.has(this.#method) && this.#idempotentRetries === 0) ||
        this.#mayRetryIdempotent())
    ) {
      this.#idempotentRetries++;
      if (this.#retryElsewhere(conn?.reused === true)) return;
    }
    const { status, reason } = statusForError(err);
    this.#failRequest(status, reason);
  }

  #mayRetryIdempotent(): boolean {
    const cluster = this.#cluster;
    return (
      cluster !== undefined &&
      !this.#hasBody &&
      this.#idempotentRetries < cluster.config.retries.idempotent &&
      IDEMPOTENT.has(this.#method)
    );
  }

  /** Sends the request again (another endpoint unless `sameAllowed`); false when there is none. */
  #retryElsewhere(sameAllowed = false): boolean {
    const cluster = this.#cluster as ProxyCluster;
    const failed = this.#ticket?.endpoint.key ?? this.#lastEndpoint;
    this.#ticket = undefined;
    const candidates = cluster.balancer.picker.endpoints;
    const other = candidates.some((t) => t.endpoint.key !== failed);
    if (!other && !sameAllowed) return false;
    this.#exclude = other ? failed : undefined;
    this.#responded = false;
    this.#swallow = false;
    this.#status = 0;
    this.#dispatch();
    return true;
  }

  #endTicket(outcome: 'success' | 'http-error' | 'connect-failure' | 'transport-error' | 'aborted'): void {
    const t = this.#ticket;
    if (t === undefined) return;
    this.#ticket = undefined;
    this.#lastEndpoint = t.endpoint.key;
    t.end(outcome);
  }

  // ---- ending requests and the connection ----

  #answered(status: number, reason: string | undefined): void {
    const ctx = this.#ctx;
    ctx.metrics.observeDownstream(ctx.listener, status);
    const state = ctx.state();
    if (state.accessLog) {
      ctx.access({
        client: this.#clientAddress,
        method: this.#method,
        path: this.#path,
        status,
        reason,
        startMs: this.#requestStartMs,
        cluster: this.#cluster?.name ?? '',
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
    this.#cluster = undefined;
    this.#upstream = undefined;
    this.#scanner = undefined;
    this.#pendingBody = undefined;
    this.#pendingBytes = 0;
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
      this.#abortUpstream('aborted');
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
    this.#abortUpstream('transport-error');
    this.#answered(0, 'timeout');
    this.#destroy();
  }

  #abortUpstream(outcome: 'aborted' | 'transport-error'): void {
    const conn = this.#conn;
    this.#conn = undefined;
    if (conn !== undefined) conn.abort('error');
    else if (this.#ticket !== undefined && this.#upstream !== undefined) {
      this.#upstream.pool(this.#ticket.endpoint, this.#servername).cancel(this);
    }
    this.#endTicket(outcome);
  }

  #closed(): void {
    if (this.#ticket !== undefined || this.#conn !== undefined) {
      this.#abortUpstream('aborted');
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
