/**
 * One keep-alive HTTP/1.1 socket to an endpoint (the proxy's upstream side): one request at a
 * time, the response head read with the strict parser, body bytes forwarded to the waiting
 * `ResponseSink` as they arrive in their original framing (no copy, no re-framing) while the
 * connection tracks where the response ends (Content-Length, validated chunked, or the close).
 * 1xx heads are skipped; a 101 to an upgrade request hands the raw socket to the sink. A socket
 * that sent more than its response, or that failed, is never reused. Its bytes arrive through
 * 'data' events or, for a socket dialled with `onread`, through `read(chunk)` (then `pipeTo`
 * carries a tunnel's bytes, since the socket's readable side never sees them).
 */
import type { Socket } from 'node:net';
import type { Endpoint } from '../../core/endpoint.js';
import { ErrorCodes } from '../../core/errors.js';
import type { CloseReason, ConnectionLife } from '../../pool/lifetime-policy.js';
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

/** What a connection needs from the endpoint pool that owns it (`Http1EndpointPool`). */
export interface ConnectionHome {
  readonly endpoint: Endpoint;
  /** The lifetime policy's idle limit, when it sets one (a server's keep-alive hint then cannot lengthen it). */
  readonly idleFromPolicy: number | undefined;
  /** The response is complete: the socket goes back to the pool, or closes when not `reusable`. */
  release(conn: UpstreamConnection, reusable: boolean): void;
  /** The socket closed. */
  forget(conn: UpstreamConnection, wasConnected: boolean): void;
}

/** Largest response head accepted from an upstream. */
const MAX_RESPONSE_HEAD_BYTES = 64 * 1024;
const MAX_RESPONSE_FIELDS = 256;
const P_IDLE = 0;
const P_HEAD = 1;
const P_LENGTH = 2;
const P_CHUNKED = 3;
const P_UNTIL_CLOSE = 4;
/** An error with a Node-style `code` that `statusForError` maps (connect failure, socket closed, protocol). */
export function upstreamError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/** One keep-alive socket to an endpoint. */
export class UpstreamConnection implements ConnectionLife {
  readonly socket: Socket;
  readonly pool: ConnectionHome;
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
  readonly #reads: 'events' | 'callback';
  /** Where a tunnel's bytes go (reads by callback), and what came before it was set. */
  #tunnelTo: Socket | undefined;
  #tunnelEarly: Buffer[] | undefined;
  readonly #onSocketData = (chunk: Buffer): void => this.#onData(chunk);

  /**
   * `reads`: 'events' when the socket's bytes come as 'data' events, 'callback' when its
   * `onread` callback passes them to `read` (chunks the connection may keep).
   */
  constructor(
    pool: ConnectionHome,
    socket: Socket,
    nowMs: number,
    maxAgeMs: number | undefined,
    idleMs: number,
    reads: 'events' | 'callback' = 'events',
  ) {
    this.pool = pool;
    this.socket = socket;
    this.openedAtMs = nowMs;
    this.idleSinceMs = nowMs;
    this.maxAgeMs = maxAgeMs;
    this.idleLimitMs = idleMs;
    this.#reads = reads;
    if (reads === 'events') socket.on('data', this.#onSocketData);
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

  /** Bytes read by the socket's `onread` callback (a chunk of its own, kept as long as needed). */
  read(chunk: Buffer): void {
    if (!this.tunnel) {
      this.#onData(chunk);
      return;
    }
    const to = this.#tunnelTo;
    if (to === undefined) {
      this.#tunnelEarly ??= [];
      this.#tunnelEarly.push(chunk);
    } else if (!to.write(chunk)) {
      this.socket.pause();
      to.once('drain', () => this.socket.resume());
    }
  }

  /**
   * After a protocol switch: the upstream's bytes go to `dest` with backpressure, and its end
   * ends `dest` (what `socket.pipe(dest)` does for a socket read through events).
   *
   * @example
   * conn.pipeTo(clientSocket); // after sink.onUpgrade
   */
  pipeTo(dest: Socket): void {
    if (this.#reads === 'events') {
      this.socket.pipe(dest);
      return;
    }
    this.#tunnelTo = dest;
    this.socket.once('end', () => dest.end());
    const early = this.#tunnelEarly;
    this.#tunnelEarly = undefined;
    for (const chunk of early ?? []) this.read(chunk);
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
    if (this.#reads === 'events') this.socket.off('data', this.#onSocketData);
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
