/**
 * An HTTP/1.1 or HTTP/1.0 request (node:http) answered through the h2 upstream exchange
 * (`H2ExchangeSink`): the upstream's head becomes the response head (hop-by-hop headers
 * removed, `Via` added; node:http frames the body), the body is written with backpressure,
 * and the upstream's trailers come back as chunked trailers when the response is chunked (an
 * HTTP/1.0 client cannot receive them). A client that goes away cancels the upstream stream.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import http2, { type IncomingHttpHeaders } from 'node:http2';
import { downstreamResponseHeaders } from '../routing/hop-headers.js';
import { bodiless, type LocalReason, replyHttp1 } from '../routing/local-reply.js';
import type { H2ExchangeSink } from './h2-exchange-sink.js';

export class H2NodeResponseSink implements H2ExchangeSink {
  readonly requestBody: IncomingMessage | null;
  readonly #res: ServerResponse;
  readonly #req: IncomingMessage;

  /** Answers `req` on `res`; `hasBody`: the request has a body to forward. */
  constructor(req: IncomingMessage, res: ServerResponse, hasBody: boolean) {
    this.#res = res;
    this.#req = req;
    this.requestBody = hasBody ? req : null;
  }

  closed(): boolean {
    return this.#res.destroyed || this.#res.writableEnded;
  }

  started(): boolean {
    return this.#res.headersSent;
  }

  head(status: number, headers: IncomingHttpHeaders): void {
    if (this.closed()) return;
    const out = downstreamResponseHeaders(headers as Record<string, string | string[] | undefined>, '2');
    // Trailers travel only in a chunked body: a response without one (an HTTP/1.0 client, a
    // Content-Length, no body at all) announces none (node:http refuses `Trailer` there).
    const req = this.#req;
    const chunked =
      req.httpVersionMajor === 1 &&
      req.httpVersionMinor >= 1 &&
      out['content-length'] === undefined &&
      !bodiless(req.method ?? 'GET', status);
    if (!chunked) delete out.trailer;
    this.#res.writeHead(status, out);
  }

  body(chunk: Buffer, resume: () => void): boolean {
    const res = this.#res;
    if (this.closed()) return true;
    if (res.write(chunk)) return true;
    res.once('drain', resume);
    return false;
  }

  end(trailers: IncomingHttpHeaders | undefined): void {
    const res = this.#res;
    if (this.closed()) return;
    if (trailers !== undefined && res.chunkedEncoding) {
      const list: [string, string][] = [];
      for (const k in trailers) if (k.charCodeAt(0) !== 58) list.push([k, String(trailers[k])]);
      if (list.length > 0) res.addTrailers(list);
    }
    res.end();
  }

  reply(reason: LocalReason): void {
    replyHttp1(this.#res, reason);
  }

  cut(): void {
    this.#res.destroy();
  }

  onGone(listener: (rstCode: number) => void): void {
    const res = this.#res;
    res.once('close', () => {
      if (!res.writableFinished) listener(http2.constants.NGHTTP2_CANCEL);
    });
  }
}
