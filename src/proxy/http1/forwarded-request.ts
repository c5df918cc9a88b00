/**
 * A request that reached the proxy another way than its HTTP/1.1 data path — from an HTTP/2
 * client, or from the listener's node:http server (HTTP/1.0) — sent to an HTTP/1.1
 * upstream over the same transport: the cluster's attempts (`Cluster.acquire`, one retry
 * policy) and the proxy's one HTTP/1.1 socket pool (`Http1Upstream`). So a cluster has one
 * pool per endpoint and one `connectionsPerEndpoint` cap whatever the client spoke.
 *
 * The request body streams from the client with backpressure, framed by the length the client
 * declared or chunked; a chunked response is de-chunked (`ChunkedDecoder`) for the response
 * target, which frames the body its own way, and its trailer section handed over at the end.
 * The response target speaks undici's callback style (`ForwardTarget`). Deadlines: the response
 * head within `requestTimeoutMs` of each attempt (else 504 unless a retry answers), then body
 * bytes at least every `bodyTimeoutMs`.
 */
import type { Readable } from 'node:stream';
import type { Attempt, AttemptRequest } from '../../cluster/attempt.js';
import { clusterInternals } from '../../cluster/cluster-internals.js';
import type { RequestOutcome } from '../../cluster/cluster-options.js';
import { type AttemptFailure, classifyFailure, outcomeOf } from '../../cluster/retry-policy.js';
import type { TimerHandle } from '../../core/clock.js';
import { EvenlbError } from '../../core/errors.js';
import { serializeHeaders } from '../hop-headers.js';
import type { ProxyCluster } from '../proxy-cluster.js';
import { ChunkedDecoder } from './chunked-decoder.js';
import type { ResponseHead } from './message-head.js';
import type { Http1Upstream, ResponseSink, UpstreamConnection } from './upstream-pool.js';

/** One request to forward. */
export interface ForwardRequest {
  readonly method: string;
  readonly path: string;
  /** From `upstreamRequestHeaders` (`host` included), plus `content-length` when the body's length is known. */
  readonly headers: readonly string[];
  /** The request body, read only once a socket is attached; null for none. */
  readonly body: Readable | null;
}

/** The response's receiver (undici's callback handler style). */
export interface ForwardTarget {
  /** `abort` gives up on the request (the client went away). */
  onConnect(abort: (err?: Error) => void): void;
  /** The final response head (raw name/value list as the upstream sent it); false pauses. */
  onHeaders(status: number, headers: readonly string[], resume: () => void, statusText: string): boolean;
  /** A piece of the de-chunked body; false pauses the upstream until `resume()`. */
  onData(chunk: Buffer): boolean;
  /** The response ended; `trailers` is the chunked trailer section (name/value list). */
  onComplete(trailers: readonly string[]): void;
  onError(err: Error): void;
}

function hasContentLength(headers: readonly string[]): boolean {
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (name.length === 14 && name.toLowerCase() === 'content-length') return true;
  }
  return false;
}

function hostOf(headers: readonly string[]): string | undefined {
  for (let i = headers.length - 2; i >= 0; i -= 2) {
    const name = headers[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') return headers[i + 1];
  }
  return undefined;
}

export class ForwardedRequest implements ResponseSink {
  readonly #cluster: ProxyCluster;
  readonly #upstream: Http1Upstream;
  readonly #req: ForwardRequest;
  readonly #target: ForwardTarget;
  readonly #head: string;
  readonly #chunked: boolean;
  readonly #servername: string;
  #ticket: Attempt | undefined;
  #conn: UpstreamConnection | undefined;
  #decoder: ChunkedDecoder | undefined;
  #status = 0;
  #responded = false;
  #swallow = false;
  #delivered = false;
  #done = false;
  #reads = 0;
  #timer: TimerHandle | undefined;
  readonly #resume = (): void => {
    this.#conn?.socket.resume();
  };
  readonly #data = (piece: Buffer): void => {
    if (!this.#target.onData(piece)) this.#conn?.socket.pause();
  };

  constructor(cluster: ProxyCluster, upstream: Http1Upstream, req: ForwardRequest, target: ForwardTarget) {
    this.#cluster = cluster;
    this.#upstream = upstream;
    this.#req = req;
    this.#target = target;
    this.#chunked = req.body !== null && !hasContentLength(req.headers);
    const framing = this.#chunked ? 'transfer-encoding: chunked\r\n' : '';
    this.#head = `${req.method} ${req.path} HTTP/1.1\r\n${serializeHeaders(req.headers)}${framing}\r\n`;
    this.#servername = cluster.servernameFor(hostOf(req.headers));
  }

  /** Sends the request: the first attempt from the cluster. */
  start(): void {
    this.#target.onConnect((err) => this.#abort(err));
    if (!this.#done) this.#send(clusterInternals(this.#cluster.cluster).acquire());
  }

  #send(attempt: Attempt | EvenlbError): void {
    if (attempt instanceof EvenlbError) {
      this.#fail(attempt);
      return;
    }
    this.#ticket = attempt;
    const conn = this.#upstream.connectionFor(attempt.endpoint, this.#servername).acquire(this);
    if (conn !== undefined) this.#attach(conn);
  }

  #request(responded: boolean): AttemptRequest {
    return { method: this.#req.method, replayable: this.#req.body === null, responded };
  }

  onConnection(conn: UpstreamConnection | Error): void {
    if (this.#done || this.#ticket === undefined) {
      if (!(conn instanceof Error)) conn.pool.release(conn, true);
      return;
    }
    if (conn instanceof Error) this.#failed(conn, false, true);
    else this.#attach(conn);
  }

  #attach(conn: UpstreamConnection): void {
    this.#conn = conn;
    this.#responded = false;
    conn.send(this, this.#head, this.#req.method === 'HEAD');
    const timeoutMs = this.#cluster.config.requestTimeoutMs;
    if (timeoutMs > 0) this.#arm(timeoutMs, () => this.#headTimeout(conn));
    const body = this.#req.body;
    if (body === null) {
      conn.requestSent = true;
      return;
    }
    const socket = conn.socket;
    const chunked = this.#chunked;
    body.on('data', (chunk: Buffer) => {
      if (this.#conn !== conn) return;
      let ok: boolean;
      if (chunked) {
        socket.cork();
        socket.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
        socket.write(chunk);
        ok = socket.write('\r\n', 'latin1');
        socket.uncork();
      } else ok = socket.write(chunk);
      if (!ok) {
        body.pause();
        socket.once('drain', () => body.resume());
      }
    });
    body.once('end', () => {
      if (this.#conn !== conn) return;
      if (chunked) socket.write('0\r\n\r\n', 'latin1');
      conn.requestSent = true;
    });
  }

  #headTimeout(conn: UpstreamConnection): void {
    if (this.#conn !== conn || this.#responded) return;
    this.#failed(new EvenlbError('EVENLB_TIMEOUT', 'upstream sent no response head in time'), false);
  }

  /** Body bytes at least every `bodyTimeoutMs`, checked once per period (no timer per read). */
  #watchBody(): void {
    const ms = this.#cluster.config.bodyTimeoutMs;
    if (ms <= 0) return;
    let seen = this.#reads;
    const check = (): void => {
      if (this.#done || this.#conn === undefined) return;
      if (this.#reads === seen) {
        this.#failed(new EvenlbError('EVENLB_TIMEOUT', 'upstream body stalled'), true);
        return;
      }
      seen = this.#reads;
      this.#arm(ms, check);
    };
    this.#arm(ms, check);
  }

  #arm(ms: number, fn: () => void): void {
    this.#timer?.cancel();
    this.#timer = this.#cluster.clock.setTimeout(fn, ms);
  }

  // ---- the response (ResponseSink) ----

  onResponseHead(head: ResponseHead): void {
    this.#responded = true;
    this.#timer?.cancel();
    const status = head.status;
    this.#status = status;
    const ticket = this.#ticket;
    if (status >= 500 && ticket !== undefined && ticket.wouldRetry({ type: 'status', status }, this.#request(false))) {
      this.#swallow = true;
      return;
    }
    this.#decoder = head.chunked && this.#req.method !== 'HEAD' ? new ChunkedDecoder() : undefined;
    this.#delivered = true;
    this.#watchBody();
    if (!this.#target.onHeaders(status, head.headers, this.#resume, head.statusText)) this.#conn?.socket.pause();
  }

  onResponseBody(chunk: Buffer): void {
    if (this.#swallow || this.#done) return;
    this.#reads++;
    const decoder = this.#decoder;
    if (decoder === undefined) this.#data(chunk);
    else decoder.decode(chunk, this.#data);
  }

  onUpgrade(conn: UpstreamConnection): void {
    // Never asked for: the connection is of no use.
    conn.socket.destroy();
    this.#failed(new EvenlbError('EVENLB_UPSTREAM_PROTOCOL', 'upstream switched protocols unasked'), true);
  }

  onResponseEnd(): void {
    this.#conn = undefined;
    this.#timer?.cancel();
    if (this.#swallow) {
      this.#swallow = false;
      if (!this.#retry({ type: 'status', status: this.#status })) {
        this.#fail(new EvenlbError('EVENLB_NO_ENDPOINTS', `upstream answered ${this.#status}; no retry left`));
      }
      return;
    }
    this.#end(this.#status >= 500 ? 'http-error' : 'success');
    if (this.#done) return;
    this.#done = true;
    this.#target.onComplete(this.#decoder?.trailers ?? []);
  }

  onUpstreamError(err: Error, responded: boolean): void {
    this.#failed(err, responded);
  }

  flush(): void {}

  #failed(err: Error, responded: boolean, connectFailure = false): void {
    const conn = this.#conn;
    this.#conn = undefined;
    this.#timer?.cancel();
    if (conn !== undefined && !conn.closed) conn.abort('error');
    const failure: AttemptFailure = connectFailure
      ? { type: 'connect-failure' }
      : classifyFailure(err, true, conn?.reused === true);
    if (this.#done || this.#delivered) {
      this.#end(outcomeOf(failure));
      this.#fail(err);
      return;
    }
    if (!this.#retry(failure, responded && !this.#swallow)) this.#fail(err);
  }

  /** Hands the failure to the cluster's retry policy; true when the request went again. */
  #retry(failure: AttemptFailure, responded = false): boolean {
    const ticket = this.#ticket;
    this.#ticket = undefined;
    if (ticket === undefined || this.#done) return false;
    const next = ticket.retry(failure, this.#request(responded));
    if (next === undefined) return false;
    this.#swallow = false;
    this.#status = 0;
    this.#send(next);
    return true;
  }

  #end(outcome: RequestOutcome): void {
    const t = this.#ticket;
    this.#ticket = undefined;
    t?.end(outcome);
  }

  #fail(err: Error): void {
    if (this.#done) return;
    this.#done = true;
    this.#target.onError(err);
  }

  #abort(_err?: Error): void {
    if (this.#done) return;
    this.#done = true;
    this.#timer?.cancel();
    const conn = this.#conn;
    this.#conn = undefined;
    if (conn !== undefined) conn.abort('error');
    else if (this.#ticket !== undefined) {
      this.#upstream.connectionFor(this.#ticket.endpoint, this.#servername).cancel(this);
    }
    this.#end('aborted');
  }
}
