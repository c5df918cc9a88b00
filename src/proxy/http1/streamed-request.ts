/**
 * What the downstream sinks whose request body is a stream (node:http requests, HTTP/2 client
 * streams) share: the one HTTP/1.1 exchange they answer for, sending the request, the body read
 * only once the exchange wants it — framed for the HTTP/1.1 upstream by the length the client
 * declared or chunked, with backpressure (the exchange pauses and resumes the stream) — and a
 * client that goes away aborting the upstream request. The response side is the subclass's.
 */
import type { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import type { LocalReason } from '../routing/local-reply.js';
import type { DownstreamSink, ExchangeRequest, SweepMembership } from './exchange-sink.js';
import type { ResponseHead } from './message-head.js';
import { Http1Exchange } from './upstream-exchange.js';

/** Called once per request with the final status (0 when it failed after the head) and the reason. */
export type ExchangeDone = (status: number, reason: string | undefined) => void;

const LAST_CHUNK = Buffer.from('0\r\n\r\n', 'latin1');
const CRLF = Buffer.from('\r\n', 'latin1');

/** A request body stream feeding the one HTTP/1.1 exchange; subclasses write the response. */
export abstract class StreamedRequest implements DownstreamSink {
  readonly decoded = true;
  protected readonly exchange: Http1Exchange;
  protected readonly done: ExchangeDone;
  readonly #body: Readable | null;
  #ended: boolean;
  #paused = false;
  #finished = false;

  /**
   * `body`: null when the request has none; `client`: what emits `close` when the client goes
   * away (the response or the stream); `done`: told the outcome once.
   */
  constructor(body: Readable | null, client: EventEmitter, done: ExchangeDone, sweep: SweepMembership) {
    this.#body = body;
    this.#ended = body === null;
    this.done = done;
    this.exchange = new Http1Exchange(this, sweep);
    client.once('close', () => {
      if (!this.finish()) return;
      this.exchange.abort('aborted');
      done(0, 'client-closed');
    });
  }

  /** Sends the request (`chunked`: its body goes upstream chunked). */
  send(request: ExchangeRequest, chunked: boolean): void {
    this.exchange.start(request);
    this.#feed(chunked);
    this.exchange.send();
  }

  /** Marks the response finished; false when it already was (nothing more may be written). */
  protected finish(): boolean {
    if (this.#finished) return false;
    this.#finished = true;
    return true;
  }

  protected get finished(): boolean {
    return this.#finished;
  }

  #feed(chunked: boolean): void {
    const body = this.#body;
    if (body === null) return;
    const exchange = this.exchange;
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

  flush(): void {}

  abstract closed(): boolean;
  abstract head(head: ResponseHead): void;
  abstract started(): boolean;
  abstract body(chunk: Buffer): boolean;
  abstract end(status: number, trailers: readonly string[]): void;
  abstract reply(reason: LocalReason): void;
  abstract cut(reason: 'upstream-cut' | 'timeout'): void;
}
