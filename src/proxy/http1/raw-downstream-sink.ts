/**
 * The raw HTTP/1.1 client connection as the one exchange's `DownstreamSink`: the response side
 * of `Http1Downstream`. It writes the head with the proxy's own framing for the request's
 * method (`responseHeadBytes`), holds it until the first body bytes (`RawResponseWriter`),
 * answers local replies with HTTP semantics (no body for HEAD; `Connection: close` and a close
 * when the connection cannot be reused), cuts the connection when a started response cannot
 * complete, and hands the sockets over after a protocol switch. What it needs of the
 * connection is `RawConnectionOwner`.
 */
import type { Socket } from 'node:net';
import { LOCAL_REPLIES, type LocalReason, rawReply } from '../routing/local-reply.js';
import type { DownstreamSink } from './exchange-sink.js';
import type { ResponseHead } from './message-head.js';
import { RawResponseWriter } from './raw-response-writer.js';
import { responseHeadBytes } from './response-head-bytes.js';
import type { UpstreamConnection } from './upstream-pool.js';

/** What the response side needs from its connection. */
export interface RawConnectionOwner {
  /** The connection is closed (or handed over). */
  closed(): boolean;
  /** The request body is still being read. */
  readingBody(): boolean;
  /** The current request's method. */
  method(): string;
  closeAfter(): boolean;
  /** The connection closes after this response. */
  setCloseAfter(): void;
  /** Stops reading the client; false when it was paused already. */
  pause(): boolean;
  resume(): void;
  paused(): boolean;
  /** Counts and logs the request's outcome. */
  answered(status: number, reason: string | undefined): void;
  /** The response is complete: next request, or close. */
  next(): void;
  /** The client has part of a response that cannot complete: cut the connection. */
  destroy(): void;
  /** The upstream switched protocols: splice the sockets from now on. */
  upgraded(conn: UpstreamConnection, head: ResponseHead, rest: Buffer): void;
}

export class RawDownstreamSink implements DownstreamSink {
  readonly decoded = false;
  readonly #socket: Socket;
  readonly #owner: RawConnectionOwner;
  readonly #writer: RawResponseWriter;
  /** Resumes the upstream once the client's buffer drained (set by the connection's exchange). */
  resumeUpstream: () => void = () => {};
  /** The current response's head was decided (it may still be held by the writer). */
  responded = false;

  constructor(socket: Socket, owner: RawConnectionOwner) {
    this.#socket = socket;
    this.#owner = owner;
    this.#writer = new RawResponseWriter(socket);
  }

  /** A new request: nothing of its response decided or written. */
  reset(): void {
    this.responded = false;
    this.#writer.reset();
  }

  closed(): boolean {
    return this.#owner.closed();
  }

  bodyDone(): boolean {
    return !this.#owner.readingBody();
  }

  bodyPaused(): boolean {
    return this.#owner.paused();
  }

  pauseBody(): boolean {
    return this.#owner.pause();
  }

  resumeBody(): void {
    this.#owner.resume();
  }

  head(head: ResponseHead): void {
    const owner = this.#owner;
    // A response before the whole request arrived: the rest of the request cannot be read.
    if (owner.readingBody()) owner.setCloseAfter();
    const out = responseHeadBytes(head, owner.method(), owner.closeAfter());
    if (out.close) owner.setCloseAfter();
    this.responded = true;
    this.#writer.head(out.text);
  }

  started(): boolean {
    return this.#writer.started;
  }

  body(chunk: Buffer): boolean {
    return this.#writer.body(chunk, this.resumeUpstream);
  }

  flush(): void {
    this.#writer.flush();
  }

  end(status: number): void {
    this.#owner.answered(status, undefined);
    this.#owner.next();
  }

  /** A local reply for the current request (nothing of a response was written yet). */
  reply(reason: LocalReason): void {
    const owner = this.#owner;
    // A response head held back (no body byte went out) is replaced by the reply.
    this.#writer.discard();
    const close = owner.closeAfter() || owner.readingBody() || LOCAL_REPLIES[reason].closes;
    owner.answered(LOCAL_REPLIES[reason].status, reason);
    this.#socket.write(rawReply(reason, owner.method(), close), 'latin1');
    if (close) owner.setCloseAfter();
    owner.next();
  }

  cut(reason: 'upstream-cut' | 'timeout'): void {
    this.#owner.answered(0, reason);
    this.#owner.destroy();
  }

  upgraded(conn: UpstreamConnection, head: ResponseHead, rest: Buffer): void {
    this.#owner.answered(101, undefined);
    this.#owner.upgraded(conn, head, rest);
  }
}
