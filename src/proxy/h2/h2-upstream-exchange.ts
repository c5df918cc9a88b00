/**
 * The one h2 upstream exchange: every request to an `h2` cluster, whatever the client spoke
 * (HTTP/2 streams and gRPC, HTTP/1.1 and HTTP/1.0 through node:http), goes through `H2Exchange`.
 * It takes attempts from the cluster (`clusterInternals(c).acquire()`), a place on a session to
 * `attempt.endpoint` from the `H2SessionPool`, opens one upstream stream per attempt, and
 * answers through a small interface (`H2ExchangeSink`) — the only thing that differs between
 * client protocols.
 *
 * Retries go through the cluster's one retry policy (`attempt.retry(failure, request)`,
 * `attempt.wouldRetry`), as on the HTTP/1.1 exchange:
 * - a session that fails to connect, and a stream the upstream refused unprocessed
 *   (REFUSED_STREAM — also what a GOAWAY below the stream's id closes it with — or a session
 *   that takes no new stream) are `connect-failure`s: nothing was processed, so any method may
 *   go again, under `retries.connectFailures` — provided the request body can be sent again;
 * - a reset, a close without a response or no response head within `requestTimeoutMs` is a
 *   `transport-error`: retried for idempotent methods with a replayable body, under
 *   `retries.idempotent`, only while the client has seen nothing of a response;
 * - a response with a `retries.on` status is withheld only while a retry will really be made
 *   (`withholds`), its body buffered up to `retryBufferBytes` (`WithheldResponse`, shared with
 *   the HTTP/1.1 exchange); a larger body releases it to the client as it is (not retried), and
 *   when the retry cannot be made after all (retries used up, the target gone, the cluster
 *   closed) the client gets it as it was: status, headers, body and trailers.
 * A request body is replayable while all of it is held (`H2RequestBody`: up to
 * `retryBufferBytes`). gRPC requests follow the same rules (they are POSTs: only the refused
 * and connect-failure retries apply); a `grpc-status` is the application's answer, never an
 * HTTP status retry — a client's gRPC retry policy decides which methods may be retried on it.
 *
 * Deadlines (`H2Deadlines`, per attempt): the response head within `requestTimeoutMs`, then
 * DATA at least every `bodyTimeoutMs`; a stalled body already shown to the client cuts it. A
 * client's `grpc-timeout` is forwarded and enforced across all attempts. A client that goes
 * away cancels the upstream stream (with its reset code). Each attempt ends once, with the
 * stream's outcome (`streamOutcome`), its failure, or `aborted` — and with what the response
 * said (`h2AttemptResponse`): 429 or 503, or RESOURCE_EXHAUSTED, is pushback, and the
 * `endpoint-load-metrics` trailer (or header) is the endpoint's load report when the cluster's
 * policy reads reports.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import http2, { type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { Attempt, AttemptRequest } from '../../cluster/attempt.js';
import { clusterInternals } from '../../cluster/cluster-internals.js';
import type { RequestOutcome } from '../../cluster/cluster-options.js';
import { type AttemptResponse, h2AttemptResponse } from '../../cluster/load-feedback.js';
import { type AttemptFailure, outcomeOf } from '../../cluster/retry-policy.js';
import type { TimerHandle } from '../../core/clock.js';
import { EvenlbError } from '../../core/errors.js';
import { LOCAL_REPLIES, type LocalReason, reasonForError } from '../routing/local-reply.js';
import { WithheldResponse, withholds } from '../routing/withheld-response.js';
import type { ProxyCluster } from '../upstream/proxy-cluster.js';
import { H2ClientStreamSink } from './h2-client-stream-sink.js';
import { H2Deadlines } from './h2-deadlines.js';
import type { H2ExchangeDone, H2ExchangeSink } from './h2-exchange-sink.js';
import { H2NodeResponseSink } from './h2-node-response-sink.js';
import { H2RequestBody } from './h2-request-body.js';
import { type H2Headers, h2RequestHeaders, parseGrpcTimeoutMs } from './h2-request-headers.js';
import type { H2SessionLease, H2SessionPool } from './h2-session-pool.js';
import { connectStream, streamOutcome } from './h2-stream-attempt.js';

const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR, NGHTTP2_INTERNAL_ERROR, NGHTTP2_REFUSED_STREAM } = http2.constants;
const END_STREAM = 0x1;
const REFUSED: AttemptFailure = { type: 'connect-failure' };
const TRANSPORT: AttemptFailure = { type: 'transport-error' };

/** An upstream response head, as withheld and delivered. */
interface Head {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly endStream: boolean;
}

/** One attempt's upstream stream and what it has brought so far. */
interface Try {
  readonly attempt: Attempt;
  readonly lease: H2SessionLease;
  readonly up: http2.ClientHttp2Stream;
  deadlines: H2Deadlines | undefined;
  status: number;
  /** The response head (a trailers-only response's `grpc-status` is there). */
  head: IncomingHttpHeaders | undefined;
  trailers: IncomingHttpHeaders | undefined;
  held: WithheldResponse<Head> | undefined;
  /** The head went to the client. */
  delivered: boolean;
  timedOut: boolean;
  /** Set when the exchange itself cancelled the stream: the attempt's outcome. */
  cancelled: RequestOutcome | undefined;
}

export class H2Exchange {
  readonly #cluster: ProxyCluster;
  readonly #sink: H2ExchangeSink;
  readonly #method: string;
  readonly #headers: H2Headers;
  readonly #body: H2RequestBody;
  readonly #done: H2ExchangeDone;
  #try: Try | undefined;
  /** The client's answer is decided (or the client is gone): `done` was called. */
  #finished = false;
  #deadline: TimerHandle | undefined;

  /** `headers`: what to send upstream, pseudo-headers included. `send()` starts it. */
  constructor(cluster: ProxyCluster, sink: H2ExchangeSink, method: string, headers: H2Headers, done: H2ExchangeDone) {
    this.#cluster = cluster;
    this.#sink = sink;
    this.#method = method;
    this.#headers = headers;
    this.#done = done;
    this.#body = new H2RequestBody(sink.requestBody, cluster.config.retryBufferBytes);
    sink.onGone((code) => this.#gone(code));
  }

  /** Sends the request: the cluster's first attempt; `deadlineMs`: the client's own (grpc-timeout). */
  send(deadlineMs?: number): Promise<void> {
    if (deadlineMs !== undefined) {
      this.#deadline = this.#cluster.clock.setTimeout(() => this.#expired(), deadlineMs + 50);
    }
    return this.#connect(clusterInternals(this.#cluster.cluster).acquire());
  }

  async #connect(first: Attempt | EvenlbError): Promise<void> {
    const connected = await connectStream(first, this.#cluster.h2 as H2SessionPool, this.#method);
    if (connected instanceof Error) {
      if (!this.#finished) this.#answer(reasonForError(connected));
      return;
    }
    const { attempt, lease } = connected;
    if (this.#finished) {
      lease.release();
      attempt.end('aborted');
      return;
    }
    let up: http2.ClientHttp2Stream;
    try {
      up = lease.session.request({ ...this.#headers }, { endStream: this.#body.empty });
    } catch {
      // The session takes no new stream (a GOAWAY came first): nothing was sent.
      lease.release();
      if (!this.#retry(attempt, this.#refusal(), false)) this.#answer('upstream-error');
      return;
    }
    const t: Try = {
      attempt,
      lease,
      up,
      deadlines: undefined,
      status: 0,
      head: undefined,
      trailers: undefined,
      held: undefined,
      delivered: false,
      timedOut: false,
      cancelled: undefined,
    };
    this.#try = t;
    t.deadlines = new H2Deadlines(this.#cluster, up, { head: () => this.#timedOut(t), body: () => this.#timedOut(t) });
    up.on('response', (h, flags) => this.#onHead(t, h, (flags & END_STREAM) !== 0));
    up.on('data', (chunk: Buffer) => this.#onData(t, chunk));
    up.on('trailers', (trailers) => {
      t.trailers = trailers;
    });
    up.on('error', () => {
      // 'close' follows and carries the reset code.
    });
    up.once('close', () => this.#onClose(t));
    this.#body.attach(up);
  }

  /** What the cluster's retry policy reads about the request. */
  #request(responded: boolean): AttemptRequest {
    return { method: this.#method, replayable: this.#body.replayable, responded };
  }

  /**
   * What the attempt's response said, for its end: the status and `grpc-status` (pushback), and
   * the `endpoint-load-metrics` trailer or header when the cluster's policy reads reports.
   */
  #response(t: Try): AttemptResponse {
    return h2AttemptResponse(t.status, t.head, t.trailers, this.#cluster.readsReports);
  }

  /** A refused stream is a connect failure when the request can be sent again; else it cannot be retried. */
  #refusal(): AttemptFailure {
    return this.#body.replayable ? REFUSED : TRANSPORT;
  }

  #onHead(t: Try, headers: IncomingHttpHeaders, endStream: boolean): void {
    const status = Number(headers[':status'] ?? 0);
    t.status = status;
    t.head = headers;
    t.deadlines?.responded();
    const head: Head = { status, headers, endStream };
    const limitBytes = this.#cluster.config.retryBufferBytes;
    if (!this.#finished && withholds(t.attempt, status, limitBytes, this.#request(false))) {
      t.held = new WithheldResponse(head, limitBytes);
      return;
    }
    this.#deliver(t, head);
  }

  #deliver(t: Try, head: Head): void {
    t.delivered = true;
    if (!this.#finished) this.#sink.head(head.status, head.headers, head.endStream);
  }

  #onData(t: Try, chunk: Buffer): void {
    t.deadlines?.read();
    const held = t.held;
    if (held !== undefined) {
      if (!held.add(chunk)) this.#release(t);
      return;
    }
    if (this.#finished) return;
    const up = t.up;
    if (!this.#sink.body(chunk, () => up.resume())) up.pause();
  }

  /** A withheld response goes to the client after all (too big to buffer, or no retry left). */
  #release(t: Try): void {
    const held = t.held as WithheldResponse<Head>;
    t.held = undefined;
    this.#deliver(t, held.head);
    for (const part of held.parts) this.#onData(t, part);
  }

  #timedOut(t: Try): void {
    t.timedOut = true;
  }

  #onClose(t: Try): void {
    t.deadlines?.stop();
    t.lease.release();
    if (this.#try === t) {
      this.#try = undefined;
      this.#body.detach();
    }
    if (t.cancelled !== undefined || this.#finished) {
      t.attempt.end(t.cancelled ?? 'aborted');
      return;
    }
    const code = t.up.rstCode ?? NGHTTP2_NO_ERROR;
    if (!t.timedOut && code === NGHTTP2_NO_ERROR && t.status !== 0) this.#complete(t);
    else this.#failed(t, code);
  }

  /** The upstream's whole response is in. */
  #complete(t: Try): void {
    if (t.held !== undefined) {
      // Withheld because the policy would retry it; when it no longer can, the response as it was.
      if (this.#retry(t.attempt, { type: 'status', status: t.status }, false, this.#response(t))) return;
      this.#release(t);
    }
    const grpcStatus = t.trailers?.['grpc-status'] ?? t.head?.['grpc-status'];
    t.attempt.end(streamOutcome(NGHTTP2_NO_ERROR, t.status, grpcStatus), this.#response(t));
    this.#finish(t.status, undefined);
    this.#sink.end(t.trailers);
  }

  /** The stream failed (reset, refused, closed without a response, timed out). */
  #failed(t: Try, code: number): void {
    const reason: LocalReason = t.timedOut ? 'upstream-timeout' : 'upstream-reset';
    if (t.delivered) {
      // The client has part of a response: all that can be done is to cut it.
      t.attempt.end('transport-error', this.#response(t));
      this.#finish(t.status, t.timedOut ? reason : undefined);
      this.#sink.cut(t.timedOut ? NGHTTP2_INTERNAL_ERROR : code);
      return;
    }
    // A withheld response was never shown: the client has seen nothing.
    t.held = undefined;
    const refused = !t.timedOut && code === NGHTTP2_REFUSED_STREAM && t.status === 0;
    if (this.#retry(t.attempt, refused ? this.#refusal() : TRANSPORT, false)) return;
    this.#answer(reason);
  }

  /**
   * Ends `attempt` as failed by `failure` and sends the request again when the cluster's one
   * retry policy hands out another attempt (counted once, by the cluster). False when it does
   * not (the attempt is ended either way).
   */
  #retry(attempt: Attempt, failure: AttemptFailure, responded: boolean, response?: AttemptResponse): boolean {
    if (this.#finished) {
      attempt.end(outcomeOf(failure), response);
      return false;
    }
    const next = attempt.retry(failure, this.#request(responded), response);
    if (next === undefined || next instanceof EvenlbError) return false;
    void this.#connect(next);
    return true;
  }

  /** Nothing of a response was written: the local reply for `reason`. */
  #answer(reason: LocalReason): void {
    this.#finish(LOCAL_REPLIES[reason].status, reason);
    this.#sink.reply(reason);
  }

  #finish(status: number, reason: string | undefined): void {
    this.#finished = true;
    this.#deadline?.cancel();
    this.#body.discard();
    this.#done(status, reason);
  }

  /** The client went away: the upstream stream is cancelled with the client's code. */
  #gone(code: number): void {
    if (this.#finished) return;
    const t = this.#try;
    this.#finish(t?.status ?? 0, t === undefined ? 'client-closed' : undefined);
    if (t !== undefined && !t.up.closed) {
      t.cancelled = 'aborted';
      t.up.close(code);
    }
  }

  /** The client's own deadline (`grpc-timeout`) passed: answer it, cancel the upstream stream. */
  #expired(): void {
    if (this.#finished) return;
    const t = this.#try;
    if (this.#sink.started()) {
      this.#finish(t?.status ?? 0, 'deadline-exceeded');
      this.#sink.cut(NGHTTP2_CANCEL);
    } else this.#answer('deadline-exceeded');
    if (t !== undefined && !t.up.closed) {
      t.cancelled = 'transport-error';
      t.up.close(NGHTTP2_CANCEL);
    }
  }
}

/**
 * Forwards the HTTP/2 client stream `down` to an endpoint of the `h2` cluster `cluster`.
 * `done(status, reason)` is called once, when the client's answer is decided.
 *
 * @example
 * void forwardStreamToH2(stream, headers, endStream, cluster, upstreamRequestHeaders(flat, ctx), done);
 */
export function forwardStreamToH2(
  down: ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  /** True when the client's HEADERS frame ended the stream (no request body). */
  endStream: boolean,
  cluster: ProxyCluster,
  /** The request headers to send, from `upstreamRequestHeaders` (forwarding headers added). */
  upstreamHeaders: readonly string[],
  done: H2ExchangeDone,
): Promise<void> {
  const grpc = String(headers['content-type'] ?? '').startsWith('application/grpc');
  const method = String(headers[':method'] ?? 'POST');
  const pseudo: H2Headers = { ':method': headers[':method'], ':path': headers[':path'] };
  if (headers[':scheme'] !== undefined) pseudo[':scheme'] = headers[':scheme'];
  const sink = new H2ClientStreamSink(down, method, grpc, !endStream);
  const exchange = new H2Exchange(cluster, sink, method, h2RequestHeaders(pseudo, upstreamHeaders), done);
  return exchange.send(parseGrpcTimeoutMs(headers['grpc-timeout'] as string | undefined));
}

/**
 * Forwards an HTTP/1.x client request (node:http) to an endpoint of the `h2` cluster `cluster`;
 * trailers come back as HTTP/1.1 chunked trailers when the response is chunked.
 *
 * @example
 * void forwardRequestToH2(req, res, upstreamRequestHeaders(req.rawHeaders, ctx), hasBody, cluster, done);
 */
export function forwardRequestToH2(
  req: IncomingMessage,
  res: ServerResponse,
  upstreamHeaders: readonly string[],
  hasBody: boolean,
  cluster: ProxyCluster,
  done: H2ExchangeDone,
): Promise<void> {
  const method = req.method ?? 'GET';
  const headers = h2RequestHeaders({ ':method': method, ':path': req.url ?? '/', ':scheme': 'http' }, upstreamHeaders);
  return new H2Exchange(cluster, new H2NodeResponseSink(req, res, hasBody), method, headers, done).send();
}
