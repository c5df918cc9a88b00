/**
 * An HTTP/2 client stream answered through the one HTTP/1.1 upstream exchange: the
 * `DownstreamSink` that writes a `ServerHttp2Stream`. The head becomes HTTP/2 headers (one
 * Content-Length, the one the proxy framed by), held until the first body bytes so a failure
 * before then is a local reply (in gRPC form for gRPC clients); a chunked response's trailer
 * section becomes HTTP/2 trailers; the stream's flow control gives backpressure; a client reset
 * aborts the upstream request.
 */
import type { ServerHttp2Stream } from 'node:http2';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import type { ResponseHead } from '../http1/message-head.js';
import type { ExchangeDone } from '../http1/streamed-request.js';
import { StreamedRequest } from '../http1/streamed-request.js';
import type { SweepMembership } from '../http1/upstream-exchange.js';
import { downstreamResponseHeaders, isHopHeader, responseContentLength } from '../routing/hop-headers.js';
import { LOCAL_REPLIES, type LocalReason, reasonForError, replyHttp2 } from '../routing/local-reply.js';

type Headers = Record<string, string | string[] | undefined>;
type OutHeaders = Record<string, string | string[] | number>;

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

export class H2StreamSink extends StreamedRequest {
  readonly #stream: ServerHttp2Stream;
  readonly #method: string;
  readonly #grpc: boolean;
  #status = 0;
  /** The upstream announced trailers: the stream waits for them before it ends. */
  #trailers = false;
  #head: OutHeaders | undefined;

  /** Answers `stream` (`hasBody`: its body is forwarded; `grpc`: local replies in gRPC form); `send()` starts it. */
  constructor(
    stream: ServerHttp2Stream,
    method: string,
    grpc: boolean,
    done: ExchangeDone,
    sweep: SweepMembership,
    hasBody: boolean,
  ) {
    super(hasBody ? stream : null, stream, done, sweep);
    this.#stream = stream;
    this.#method = method;
    this.#grpc = grpc;
  }

  closed(): boolean {
    return this.finished || this.#stream.closed;
  }

  head(head: ResponseHead): void {
    const status = head.status;
    this.#status = status;
    const headers = headerObject(head.headers);
    const out = downstreamResponseHeaders(headers, '1.1') as OutHeaders;
    out[':status'] = status;
    // One Content-Length, the one the proxy framed by: an upstream may repeat an identical value,
    // which node:http2 refuses to send.
    delete out['content-length'];
    const length = responseContentLength(head.headers);
    if (length !== undefined) out['content-length'] = length;
    const empty = this.#method === 'HEAD' || status === 204 || status === 304;
    const te = headers['transfer-encoding'];
    this.#trailers = !empty && (headers.trailer !== undefined || (te !== undefined && /chunked/i.test(String(te))));
    if (empty) this.#send(out, { endStream: true });
    else this.#head = out;
  }

  started(): boolean {
    return this.#stream.headersSent;
  }

  #respond(): void {
    const head = this.#head;
    if (head === undefined) return;
    this.#head = undefined;
    if (!this.#stream.closed) this.#send(head, { waitForTrailers: this.#trailers });
  }

  /** Sends a head; one node:http2 refuses (a header it will not carry) is a bad gateway, not a throw. */
  #send(head: OutHeaders, options: { endStream?: boolean; waitForTrailers?: boolean }): void {
    try {
      this.#stream.respond(head, options);
    } catch (err) {
      const e = new EvenlbError(
        ErrorCodes.UPSTREAM_PROTOCOL,
        `upstream response head cannot be sent over HTTP/2: ${(err as Error).message}`,
      );
      this.exchange.abort('transport-error');
      this.reply(reasonForError(e));
    }
  }

  body(chunk: Buffer): boolean {
    const s = this.#stream;
    if (s.closed || s.writableEnded) return true;
    this.#respond();
    if (s.closed || s.writableEnded) return true;
    if (s.write(chunk)) return true;
    s.once('drain', this.exchange.resumeUpstream);
    return false;
  }

  end(status: number, trailers: readonly string[]): void {
    if (!this.finish()) return;
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
    this.done(status || this.#status, undefined);
  }

  reply(reason: LocalReason): void {
    if (!this.finish()) return;
    this.#head = undefined;
    replyHttp2(this.#stream, reason, this.#grpc, this.#method);
    this.done(LOCAL_REPLIES[reason].status, reason);
  }

  cut(reason: 'upstream-cut' | 'timeout'): void {
    if (!this.finish()) return;
    if (!this.#stream.closed) this.#stream.close(0x2 /* INTERNAL_ERROR */);
    this.done(0, reason);
  }
}
