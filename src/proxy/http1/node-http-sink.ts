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
import { StreamedRequest } from './streamed-request.js';
import { type DownstreamSink, type ExchangeRequest, Http1Exchange, type SweepMembership } from './upstream-exchange.js';

/** Called once per request with the final status (0 when it failed after the head) and the reason. */
export type ExchangeDone = (status: number, reason: string | undefined) => void;

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

export class NodeHttpSink extends StreamedRequest implements DownstreamSink {
  readonly #res: ServerResponse;
  readonly #done: ExchangeDone;
  readonly #exchange: Http1Exchange;
  readonly #http10: boolean;
  #finished = false;
  /** The response head, held until the first body bytes (or the end). */
  #head: { readonly status: number; readonly text: string; readonly list: string[] } | undefined;

  /** Sends `request` for `req`, answering on `res`; `chunked`: the body goes upstream chunked. */
  constructor(req: IncomingMessage, res: ServerResponse, hasBody: boolean, done: ExchangeDone, sweep: SweepMembership) {
    super(hasBody ? req : null);
    this.#res = res;
    this.#done = done;
    this.#http10 = req.httpVersionMinor === 0;
    this.#exchange = new Http1Exchange(this, sweep);
    res.once('close', () => {
      if (this.#finished) return;
      this.#finished = true;
      this.#exchange.abort('aborted');
      this.#done(0, 'client-closed');
    });
  }

  /** Sends the request. */
  send(request: ExchangeRequest, chunked: boolean): void {
    this.#exchange.start(request);
    this.feed(this.#exchange, chunked);
    this.#exchange.send();
  }

  closed(): boolean {
    return this.#finished;
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
    this.#writeHead();
    const ok = this.#res.write(chunk);
    if (!ok) this.#res.once('drain', this.#exchange.resumeUpstream);
    return ok;
  }

  flush(): void {}

  end(status: number, trailers: readonly string[]): void {
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
    this.#done(status, undefined);
  }

  reply(reason: LocalReason): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#head = undefined;
    replyHttp1(this.#res, reason);
    this.#done(this.#res.statusCode, reason);
  }

  cut(reason: 'upstream-cut' | 'timeout'): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#res.destroy();
    this.#done(0, reason);
  }
}
