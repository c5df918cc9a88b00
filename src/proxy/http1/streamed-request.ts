/**
 * The request side shared by the downstream sinks whose request body is a stream (node:http
 * requests, HTTP/2 client streams): the body is read only once the exchange wants it, framed for
 * the HTTP/1.1 upstream by the length the client declared or chunked, with backpressure (the
 * exchange pauses and resumes the stream). The response side is the subclass's.
 */
import type { Readable } from 'node:stream';
import type { Http1Exchange } from './upstream-exchange.js';

const LAST_CHUNK = Buffer.from('0\r\n\r\n', 'latin1');
const CRLF = Buffer.from('\r\n', 'latin1');

/** A request body stream feeding an exchange. */
export abstract class StreamedRequest {
  readonly decoded = true;
  readonly #body: Readable | null;
  #ended: boolean;
  #paused = false;

  /** `body`: null when the request has none. */
  constructor(body: Readable | null) {
    this.#body = body;
    this.#ended = body === null;
  }

  /** Starts feeding the body to `exchange` (`chunked`: frame each piece as a chunk). */
  protected feed(exchange: Http1Exchange, chunked: boolean): void {
    const body = this.#body;
    if (body === null) return;
    body.on('data', (chunk: Buffer) => {
      if (chunked)
        exchange.forward(Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`, 'latin1'), chunk, CRLF]));
      else exchange.forward(chunk);
    });
    body.once('end', () => {
      this.#ended = true;
      if (chunked) exchange.forward(LAST_CHUNK);
      exchange.bodySent();
    });
  }

  bodyDone(): boolean {
    return this.#ended;
  }

  bodyPaused(): boolean {
    return this.#paused;
  }

  pauseBody(): boolean {
    if (this.#paused || this.#body === null) return false;
    this.#paused = true;
    this.#body.pause();
    return true;
  }

  resumeBody(): void {
    if (!this.#paused || this.#body === null) return;
    this.#paused = false;
    this.#body.resume();
  }
}
