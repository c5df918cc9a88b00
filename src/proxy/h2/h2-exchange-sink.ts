/**
 * The downstream side of the h2 upstream exchange (`H2Exchange`): what it needs from the client
 * whatever the client spoke — an HTTP/2 stream (`H2ClientStreamSink`) or a node:http response
 * to an HTTP/1.1 or HTTP/1.0 request (`H2NodeResponseSink`). The exchange decides what the
 * client gets (retries, withheld responses, deadlines, local replies); a sink only writes it in
 * its protocol's form.
 */
import type { IncomingHttpHeaders } from 'node:http2';
import type { Readable } from 'node:stream';
import type { LocalReason } from '../routing/local-reply.js';

/** Called once per request with the final status (0 when none was sent) and the reason. */
export type H2ExchangeDone = (status: number, reason: string | undefined) => void;

export interface H2ExchangeSink {
  /** The client's request body; null when it has none. */
  readonly requestBody: Readable | null;
  /** The client is gone: nothing more is written. */
  closed(): boolean;
  /** Something of a response was written: a local reply is no longer possible. */
  started(): boolean;
  /** The upstream's response head; `endStream`: neither body nor trailers follow. */
  head(status: number, headers: IncomingHttpHeaders, endStream: boolean): void;
  /** A piece of the body; false: the client is full, call `resume` once it drained. */
  body(chunk: Buffer, resume: () => void): boolean;
  /** The response is complete, with the upstream's trailers, if it sent any. */
  end(trailers: IncomingHttpHeaders | undefined): void;
  /** Nothing of a response was written: answer with the local reply for `reason`. */
  reply(reason: LocalReason): void;
  /** Part of a response was written and it cannot complete; `rstCode` says why (HTTP/2 reset code). */
  cut(rstCode: number): void;
  /** `listener` is called once if the client goes away before its response is complete, with the reset code to pass upstream. */
  onGone(listener: (rstCode: number) => void): void;
}
