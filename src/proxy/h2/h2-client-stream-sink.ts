/**
 * An HTTP/2 client stream answered through the h2 upstream exchange (`H2ExchangeSink`): the
 * upstream's head becomes the client's (hop-by-hop headers removed, `Via` added), the body goes
 * out with the stream's flow control, and the trailers frame is always sent — empty when the
 * upstream sent none — because it carries END_STREAM (a NO_ERROR reset instead waits for the
 * client's half of the stream, and a client still sending a body would never see the response
 * end). Local replies are in gRPC form for gRPC requests; a client reset is passed upstream
 * with its code.
 */
import http2, { type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { downstreamResponseHeaders } from '../routing/hop-headers.js';
import { type LocalReason, replyHttp2 } from '../routing/local-reply.js';
import type { H2ExchangeSink } from './h2-exchange-sink.js';

const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR, NGHTTP2_INTERNAL_ERROR } = http2.constants;

type H2Headers = Record<string, string | string[] | number | undefined>;

export class H2ClientStreamSink implements H2ExchangeSink {
  readonly requestBody: ServerHttp2Stream | null;
  readonly #down: ServerHttp2Stream;
  readonly #grpc: boolean;
  readonly #method: string;
  #trailers: IncomingHttpHeaders | undefined;

  /** Answers `down`; `hasBody`: the client sends a body; `grpc`: local replies in gRPC form. */
  constructor(down: ServerHttp2Stream, method: string, grpc: boolean, hasBody: boolean) {
    this.#down = down;
    this.#method = method;
    this.#grpc = grpc;
    this.requestBody = hasBody ? down : null;
    down.on('error', () => {});
    down.on('wantTrailers', () => {
      const t: H2Headers = {};
      const trailers = this.#trailers;
      if (trailers !== undefined) for (const k in trailers) if (k.charCodeAt(0) !== 58) t[k] = trailers[k];
      down.sendTrailers(t);
    });
  }

  closed(): boolean {
    return this.#down.closed || this.#down.destroyed;
  }

  started(): boolean {
    return this.#down.headersSent;
  }

  head(status: number, headers: IncomingHttpHeaders, endStream: boolean): void {
    if (this.closed()) return;
    const out = downstreamResponseHeaders(headers as Record<string, string | string[] | undefined>, '2') as H2Headers;
    out[':status'] = status;
    this.#down.respond(out, endStream ? { endStream: true } : { waitForTrailers: true });
  }

  body(chunk: Buffer, resume: () => void): boolean {
    const down = this.#down;
    if (down.closed || down.writableEnded) return true;
    if (down.write(chunk)) return true;
    down.once('drain', resume);
    return false;
  }

  end(trailers: IncomingHttpHeaders | undefined): void {
    this.#trailers = trailers;
    const down = this.#down;
    if (!down.closed && !down.writableEnded && down.headersSent) down.end();
  }

  reply(reason: LocalReason): void {
    replyHttp2(this.#down, reason, this.#grpc, this.#method);
  }

  cut(rstCode: number): void {
    if (!this.#down.closed) this.#down.close(rstCode === NGHTTP2_CANCEL ? NGHTTP2_CANCEL : NGHTTP2_INTERNAL_ERROR);
  }

  onGone(listener: (rstCode: number) => void): void {
    const down = this.#down;
    down.once('close', () => {
      const code = down.rstCode;
      if (code !== undefined && code !== NGHTTP2_NO_ERROR) listener(code);
      else if (!down.writableFinished) listener(NGHTTP2_CANCEL);
    });
  }
}
