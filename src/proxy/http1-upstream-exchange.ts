/**
 * The response side of a request forwarded to an HTTP/1.1 upstream for a client that is not on
 * the HTTP/1.1 data path: an HTTP/1.0 client node:http parsed (`ServerResponse`) or an
 * HTTP/2 client stream. Each is the `ForwardTarget` of a `ForwardedRequest`:
 * the response head is copied (hop-by-hop headers removed, `Via` added, the framing the
 * proxy's own) and held until the first body bytes, so an upstream that fails before sending
 * any (malformed chunking, a reset) gets the client a 502 rather than a cut; body chunks are
 * written as they come and the upstream is paused whenever the client's buffer is full
 * (backpressure, never buffering a whole body), and a client that goes away aborts the
 * upstream request.
 */
import type { ServerResponse } from 'node:http';
import type { ServerHttp2Stream } from 'node:http2';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { downstreamRawHeaders, downstreamResponseHeaders, isHopHeader, responseContentLength } from './hop-headers.js';
import type { ForwardTarget } from './http1/forwarded-request.js';
import { replyHttp1, replyHttp2, statusForError } from './local-reply.js';

type Headers = Record<string, string | string[] | undefined>;

/** Called once per exchange with the final status (0 when the exchange failed after the head). */
export type ExchangeDone = (status: number, reason: string | undefined) => void;

const CLIENT_GONE = new Error('client closed the connection');

function hasTransferEncoding(raw: readonly string[]): boolean {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') return true;
  }
  return false;
}

/** A raw name/value list as a header object (lower-case names; repeated names joined in arrays). */
function headerObject(raw: readonly string[]): Headers {
  const out: Headers = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    const value = raw[i + 1] as string;
    const prev = out[name];
    out[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  return out;
}

/** Upstream → HTTP/1.1 client of node:http: the raw header list is copied straight into the response. */
export class Http1ResponseExchange implements ForwardTarget {
  readonly #res: ServerResponse;
  readonly #done: ExchangeDone;
  #abort: ((err?: Error) => void) | undefined;
  #resume: (() => void) | undefined;
  #status = 0;
  #finished = false;
  /** The response head, held until the first body bytes (or the end): a failure before then is a 502. */
  #head: { readonly text: string; readonly list: string[] } | undefined;
  readonly #onDrain = (): void => this.#resume?.();

  constructor(res: ServerResponse, done: ExchangeDone) {
    this.#res = res;
    this.#done = done;
    res.once('close', () => {
      if (!this.#finished) {
        this.#finished = true;
        this.#abort?.(CLIENT_GONE);
        this.#done(0, 'client-closed');
      }
    });
  }

  onConnect(abort: (err?: Error) => void): void {
    this.#abort = abort;
  }

  onHeaders(statusCode: number, raw: readonly string[], resume: () => void, statusText: string): boolean {
    if (statusCode < 200 || this.#finished) return true;
    this.#status = statusCode;
    this.#resume = resume;
    // Framing: the length the upstream's body was read by, or none (node:http then chunks,
    // or closes after the body for an HTTP/1.0 client). Never a header the upstream listed.
    const list = downstreamRawHeaders(raw, '1.1');
    const length = statusCode === 204 ? undefined : responseContentLength(raw);
    if (length !== undefined && !hasTransferEncoding(raw)) list.push('content-length', length);
    this.#head = { text: statusText, list };
    return true;
  }

  #writeHead(): void {
    const head = this.#head;
    if (head === undefined) return;
    this.#head = undefined;
    this.#res.writeHead(this.#status, head.text, head.list);
  }

  onData(chunk: Buffer): boolean {
    if (this.#finished) return true;
    this.#writeHead();
    const ok = this.#res.write(chunk);
    if (!ok) this.#res.once('drain', this.#onDrain);
    return ok;
  }

  onComplete(trailers: readonly string[]): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#writeHead();
    const res = this.#res;
    if (trailers.length > 0 && res.chunkedEncoding) {
      const t: [string, string][] = [];
      for (let i = 0; i < trailers.length; i += 2) t.push([String(trailers[i]), String(trailers[i + 1])]);
      res.addTrailers(t);
    }
    res.end();
    this.#done(this.#status, undefined);
  }

  onError(err: Error): void {
    if (this.#finished) return;
    this.#finished = true;
    const { status, reason } = statusForError(err);
    this.#head = undefined;
    if (this.#res.headersSent) {
      this.#res.destroy(err);
      this.#done(0, reason);
      return;
    }
    replyHttp1(this.#res, status, reason);
    this.#done(status, reason);
  }
}

/** Upstream → HTTP/2 client stream; a chunked response's trailer section becomes HTTP/2 trailers. */
export class Http2ResponseExchange implements ForwardTarget {
  readonly #stream: ServerHttp2Stream;
  readonly #done: ExchangeDone;
  readonly #headOnly: boolean;
  #abort: ((err?: Error) => void) | undefined;
  #resume: (() => void) | undefined;
  #status = 0;
  #finished = false;
  /** The upstream announced trailers: the stream waits for them before it ends. */
  #trailers = false;
  /** A response head held until the first body bytes (or the end): a failure before then is a 502. */
  #head: Record<string, string | string[] | number> | undefined;
  readonly #onDrain = (): void => this.#resume?.();

  constructor(stream: ServerHttp2Stream, method: string, done: ExchangeDone) {
    this.#stream = stream;
    this.#done = done;
    this.#headOnly = method === 'HEAD';
    stream.once('close', () => {
      if (!this.#finished) {
        this.#finished = true;
        this.#abort?.(CLIENT_GONE);
        this.#done(0, 'client-closed');
      }
    });
  }

  onConnect(abort: (err?: Error) => void): void {
    this.#abort = abort;
  }

  onHeaders(statusCode: number, raw: readonly string[], resume: () => void): boolean {
    this.#resume = resume;
    if (statusCode < 200 || this.#stream.closed) return true;
    this.#status = statusCode;
    const headers = headerObject(raw);
    const out = downstreamResponseHeaders(headers, '1.1') as Record<string, string | string[] | number>;
    out[':status'] = statusCode;
    // One Content-Length, the one the proxy framed by: an upstream may repeat an identical value,
    // which node:http2 refuses to send.
    delete out['content-length'];
    const length = responseContentLength(raw);
    if (length !== undefined) out['content-length'] = length;
    const empty = this.#headOnly || statusCode === 204 || statusCode === 304;
    // A chunked HTTP/1.1 body may end in a trailer section: relay it as HTTP/2 trailers (an
    // empty trailer block when there was none).
    const te = headers['transfer-encoding'];
    this.#trailers = !empty && (headers.trailer !== undefined || (te !== undefined && /chunked/i.test(String(te))));
    if (empty) this.#send(out, { endStream: true });
    else this.#head = out;
    return true;
  }

  #respond(): void {
    const head = this.#head;
    if (head === undefined) return;
    this.#head = undefined;
    if (!this.#stream.closed) this.#send(head, { waitForTrailers: this.#trailers });
  }

  /**
   * Sends the response head; a head node:http2 refuses (a header it will not carry) fails the
   * exchange as a bad gateway instead of throwing out of the upstream socket's data handler.
   */
  #send(
    head: Record<string, string | string[] | number>,
    options: { endStream?: boolean; waitForTrailers?: boolean },
  ): void {
    try {
      this.#stream.respond(head, options);
    } catch (err) {
      this.onError(
        new EvenlbError(
          ErrorCodes.UPSTREAM_PROTOCOL,
          `upstream response head cannot be sent over HTTP/2: ${(err as Error).message}`,
        ),
      );
      this.#abort?.(err as Error);
    }
  }

  onData(chunk: Buffer): boolean {
    const s = this.#stream;
    if (s.closed || s.writableEnded) return true;
    this.#respond();
    if (s.closed || s.writableEnded) return true;
    if (s.write(chunk)) return true;
    s.once('drain', this.#onDrain);
    return false;
  }

  onComplete(trailers: readonly string[]): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#respond();
    const s = this.#stream;
    if (this.#trailers && !s.closed) {
      s.once('wantTrailers', () => {
        const out: Record<string, string | string[]> = {};
        for (const [name, value] of Object.entries(headerObject(trailers))) {
          if (value !== undefined && !isHopHeader(name) && name !== 'content-length') out[name] = value;
        }
        s.sendTrailers(out);
      });
    }
    if (!s.writableEnded && !s.closed) s.end();
    this.#done(this.#status, undefined);
  }

  onError(err: Error): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#head = undefined;
    const { status, reason } = statusForError(err);
    replyHttp2(this.#stream, status, reason, false);
    this.#done(this.#stream.headersSent ? status : 0, reason);
  }
}
