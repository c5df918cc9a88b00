/**
 * A request node:http parsed (HTTP/1.0, and HTTP/1.1 requests for `h2` clusters handed over by
 * the data path) answered through the one HTTP/1.1 upstream exchange: the `DownstreamSink` that
 * writes a `ServerResponse`. The response head is copied (hop-by-hop headers out, `Via` in, the
 * framing the proxy's own: the length the upstream's body was read by, or none and node:http
 * chunks or closes) and held until the first body bytes, so an upstream that fails before
 * sending any gets the client a local reply rather than a cut; body chunks are written as they
 * come, with backpressure; a client that goes away aborts the upstream request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { downstreamRawHeaders, responseContentLength } from '../routing/hop-headers.js';
import type { LocalReason } from '../routing/local-reply.js';
import { replyHttp1 } from '../routing/local-reply.js';
import type { ResponseHead } from './message-head.js';
import { type ExchangeDone, StreamedRequest } from './streamed-request.js';

import type { SweepMembership } from './upstream-exchange.js';

function withoutTrailerHeader(list: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i] as string;
    if (name.length === 7 && name.toLowerCase() === 'trailer') continue;
    out.push(name, list[i + 1] as string);
  }
  return out;
}

function hasTransferEncoding(raw: readonly string[]): boolean {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') return true;
  }
  return false;
}

export class NodeHttpSink extends StreamedRequest {
  readonly #res: ServerResponse;
  readonly #http10: boolean;
  /** The response head, held until the first body bytes (or the end). */
  #head: { readonly status: number; readonly text: string; readonly list: string[] } | undefined;

  /** Answers `req` on `res` (`hasBody`: its body is forwarded); `send()` starts it. */
  constructor(req: IncomingMessage, res: ServerResponse, hasBody: boolean, done: ExchangeDone, sweep: SweepMembership) {
    super(hasBody ? req : null, res, done, sweep);
    this.#res = res;
    this.#http10 = req.httpVersionMinor === 0;
  }

  closed(): boolean {
    return this.finished;
  }

  head(head: ResponseHead): void {
    let list = downstreamRawHeaders(head.headers, '1.1');
    const length = head.status === 204 ? undefined : responseContentLength(head.headers);
    const framed = length !== undefined && !hasTransferEncoding(head.headers);
    if (framed) list.push('content-length', length);
    // Trailers travel only in a chunked body: an HTTP/1.0 client, or a body of known length,
    // gets none, and node:http refuses a `Trailer` header it cannot honour.
    if (framed || this.#http10) list = withoutTrailerHeader(list);
    this.#head = { status: head.status, text: head.statusText, list };
  }

  started(): boolean {
    return this.#res.headersSent;
  }

  #writeHead(): void {
    const head = this.#head;
    if (head === undefined) return;
    this.#head = undefined;
    this.#res.writeHead(head.status, head.text, head.list);
  }

  body(chunk: Buffer): boolean {
    if (this.finished) return true;
    this.#writeHead();
    const ok = this.#res.write(chunk);
    if (!ok) this.#res.once('drain', this.exchange.resumeUpstream);
    return ok;
  }

  end(status: number, trailers: readonly string[]): void {
    if (!this.finish()) return;
    this.#writeHead();
    const res = this.#res;
    if (trailers.length > 0 && res.chunkedEncoding) {
      const t: [string, string][] = [];
      for (let i = 0; i < trailers.length; i += 2) t.push([String(trailers[i]), String(trailers[i + 1])]);
      res.addTrailers(t);
    }
    res.end();
    this.done(status, undefined);
  }

  reply(reason: LocalReason): void {
    if (!this.finish()) return;
    this.#head = undefined;
    replyHttp1(this.#res, reason);
    this.done(this.#res.statusCode, reason);
  }

  cut(reason: 'upstream-cut' | 'timeout'): void {
    if (!this.finish()) return;
    this.#res.destroy();
    this.done(0, reason);
  }
}
