/**
 * The seams of the one HTTP/1.1 upstream exchange (`Http1Exchange`): the request it sends
 * (`ExchangeRequest`), the downstream side it answers through (`DownstreamSink`: one per client
 * protocol — the raw HTTP/1.1 data path, node:http, HTTP/2 streams), and the deadline sweep it
 * joins while a request is under way (`Swept`, `SweepMembership`).
 */
import type { LocalReason } from '../routing/local-reply.js';
import type { ProxyCluster } from '../upstream/proxy-cluster.js';
import type { ResponseHead } from './message-head.js';
import type { Http1Upstream, UpstreamConnection } from './upstream-pool.js';

/** What an exchange needs from the client side; one implementation per downstream protocol. */
export interface DownstreamSink {
  /** True: the body arrives de-chunked and the trailers at the end; false: in the upstream's framing, as is. */
  readonly decoded: boolean;
  /** The client is gone (or the connection was handed over): nothing more is written. */
  closed(): boolean;
  /** The final response head (a sink may hold it until the first body bytes). */
  head(head: ResponseHead): void;
  /** Something of the response reached the client (a held head does not count). */
  started(): boolean;
  /** A piece of the body (ignored once the client is gone); false pauses the upstream until the sink calls `exchange.resumeUpstream()`. */
  body(chunk: Buffer): boolean;
  /** After each upstream read has been handled (a raw sink flushes a head it held). */
  flush(): void;
  /** The response is complete; `trailers` (decoded sinks) is the chunked trailer section. */
  end(status: number, trailers: readonly string[]): void;
  /** Nothing of a response was written: answer with the local reply for `reason`. */
  reply(reason: LocalReason): void;
  /** Part of a response was written and it cannot complete: cut the client's connection or stream. */
  cut(reason: 'upstream-cut' | 'timeout'): void;
  /** Stops reading the request body; false when it was paused already. */
  pauseBody(): boolean;
  resumeBody(): void;
  bodyPaused(): boolean;
  /** The whole request body has been read from the client (or there was none). */
  bodyDone(): boolean;
  /** The upstream switched protocols for an upgrade request (raw HTTP/1.1 clients only). */
  upgraded?(conn: UpstreamConnection, head: ResponseHead, rest: Buffer): void;
}

/** One request, as the exchange sends it. */
export interface ExchangeRequest {
  readonly cluster: ProxyCluster;
  readonly upstream: Http1Upstream;
  /** The TLS server name upstream sockets are verified for ('' for plain HTTP). */
  readonly servername: string;
  readonly method: string;
  /** The request head to write upstream, blank line included. */
  readonly upHead: string;
  readonly hasBody: boolean;
  /** The protocols an upgrade request asks for (WebSocket...); undefined for plain requests. */
  readonly upgrade: string | undefined;
}

/** Something the listener's sweep checks for deadlines. */
export interface Swept {
  check(nowMs: number): void;
}

/** The listener's deadline sweep, as an exchange joins and leaves it. */
export interface SweepMembership {
  add(item: Swept): void;
  delete(item: Swept): void;
}
