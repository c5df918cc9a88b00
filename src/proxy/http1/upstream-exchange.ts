/**
 * The one HTTP/1.1 upstream exchange: every request to an HTTP/1.1 cluster, whatever the client
 * spoke (the raw HTTP/1.1 data path, HTTP/1.0 through node:http, HTTP/2 streams), goes through
 * it. It takes an attempt from the cluster (`clusterInternals(cluster).acquire`), a socket of
 * the picked endpoint from the proxy's one HTTP/1.1 pool (`Http1Upstream`), writes the request
 * head and body bytes (held while the socket connects, with backpressure both ways), and hands
 * the response to the downstream side through a small interface (`DownstreamSink`) — the only
 * thing that differs between client protocols: how a head, body bytes, the end, a local reply or
 * a cut are written.
 *
 * An attempt ends with its response's status and load report (`Attempt.end(outcome, this)`);
 * retries go through the cluster's one retry policy (`attempt.retry`). A `retryOn` response is
 * withheld only while a retry will be made (`attempt.wouldRetry`), buffered up to
 * `retryBufferBytes` (the rule and the buffer are the h2 exchange's too:
 * `routing/withheld-response.ts`; a larger body goes out as it is); if the retry fails to
 * happen, the withheld response is sent as it was.
 *
 * Deadlines are checked by a sweep (`check(nowMs)`, the listener's, never a timer per request):
 * the response head within the cluster's `requestTimeoutMs` of each attempt (else 504
 * `upstream-timeout` unless a retry answers), then a body read at least every `bodyTimeoutMs`
 * (else the client's response is cut).
 */
import type { Attempt, AttemptRequest } from '../../cluster/attempt.js';
import { clusterInternals } from '../../cluster/cluster-internals.js';
import type { RequestOutcome } from '../../cluster/cluster-options.js';
import { type AttemptResponse, loadReportHeader } from '../../cluster/load-feedback.js';
import { type AttemptFailure, classifyFailure, outcomeOf } from '../../cluster/retry-policy.js';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import { type LocalReason, reasonForError } from '../routing/local-reply.js';
import { WithheldResponse, withholds } from '../routing/withheld-response.js';
import type { ProxyCluster } from '../upstream/proxy-cluster.js';
import { ChunkedDecoder } from './chunked-decoder.js';
import type { DownstreamSink, ExchangeRequest, SweepMembership, Swept } from './exchange-sink.js';
import type { ResponseHead } from './message-head.js';
import type { ResponseSink, UpstreamConnection } from './upstream-pool.js';

export type { DownstreamSink, ExchangeRequest, SweepMembership, Swept } from './exchange-sink.js';

/** Request body bytes held while the upstream socket connects before the client is paused. */
const MAX_PENDING_BODY_BYTES = 64 * 1024;

const NO_TRAILERS: readonly string[] = Object.freeze([]);

/** A response withheld for a retry: its head and its raw body bytes so far. */
type Held = WithheldResponse<ResponseHead>;

const TIMEOUT_HEAD = (): Error => new EvenlbError(ErrorCodes.TIMEOUT, 'upstream sent no response head in time');

export class Http1Exchange implements ResponseSink, Swept, AttemptResponse {
  readonly #sink: DownstreamSink;
  readonly #sweep: SweepMembership | undefined;
  #req: ExchangeRequest | undefined;
  #ticket: Attempt | undefined;
  #conn: UpstreamConnection | undefined;
  /** The current attempt's status (0 before a head) and load report (when read): its `AttemptResponse`. */
  status = 0;
  loadReport: string | undefined;
  /** A response byte arrived for the current attempt. */
  responded = false;
  /** Something of a response was handed to the sink. */
  #delivered = false;
  /** The response withheld for a retry: its head and raw body bytes (at most `retryBufferBytes`). */
  #held: Held | undefined;
  #decoder: ChunkedDecoder | undefined;
  #pendingBody: Buffer[] | undefined;
  #pendingBytes = 0;
  /** Upstream attempts (a retry is a new attempt) and upstream reads, for the sweep. */
  #attempts = 0;
  #upReads = 0;
  readonly #timing = { attempt: 0, attemptSinceMs: 0, upReads: 0, upQuietSinceMs: 0 };
  readonly #resumeBody = (): void => this.#sink.resumeBody();
  readonly #toSink = (piece: Buffer): void => {
    if (!this.#sink.body(piece)) this.#conn?.socket.pause();
  };

  /** `sweep`: the listener's deadline sweep, joined while a request is under way (omit when the owner checks). */
  constructor(sink: DownstreamSink, sweep?: SweepMembership) {
    this.#sink = sink;
    this.#sweep = sweep;
  }

  /** The current request's cluster; undefined between requests. */
  get cluster(): ProxyCluster | undefined {
    return this.#req?.cluster;
  }

  /** The protocols the current request asks to switch to, if any. */
  get upgrade(): string | undefined {
    return this.#req?.upgrade;
  }

  /** An attempt or a socket is in use for the current request. */
  get active(): boolean {
    return this.#ticket !== undefined || this.#conn !== undefined;
  }

  /** Resumes reading the upstream after the sink's buffer drained. */
  readonly resumeUpstream = (): void => {
    this.#conn?.socket.resume();
  };

  /** Prepares `req`; body bytes may follow (`forward`) before `send()`. */
  start(req: ExchangeRequest): void {
    this.#req = req;
    this.status = 0;
    this.loadReport = undefined;
    this.responded = false;
    this.#delivered = false;
    this.#held = undefined;
    this.#decoder = undefined;
  }

  /** Sends the prepared request: the first attempt from the cluster. */
  send(): void {
    const req = this.#req as ExchangeRequest;
    this.#sweep?.add(this);
    this.#send(clusterInternals(req.cluster.cluster).acquire());
  }

  /** The request is over (answered or given up): forget it. */
  reset(): void {
    this.#sweep?.delete(this);
    this.#req = undefined;
    this.#pendingBody = undefined;
    this.#pendingBytes = 0;
    this.#held = undefined;
  }

  #send(attempt: Attempt | EvenlbError): void {
    if (attempt instanceof EvenlbError) {
      this.#finish(reasonForError(attempt));
      return;
    }
    this.#ticket = attempt;
    const req = this.#req as ExchangeRequest;
    const conn = req.upstream.connectionFor(attempt.endpoint, req.servername).acquire(this);
    if (conn !== undefined) this.#attach(conn);
  }

  /** What the cluster's retry policy reads about the current request. */
  #request(responded: boolean): AttemptRequest {
    // The body is streamed, not kept: only a bodiless request can be sent twice. (A connect
    // failure is retried anyway: nothing was written, the body is still held.)
    const req = this.#req as ExchangeRequest;
    return { method: req.method, replayable: !req.hasBody, responded };
  }

  // ---- the request ----

  /** Request body bytes (in the framing of the request head) to the upstream, or held until its socket is connected. */
  forward(part: Buffer): void {
    const conn = this.#conn;
    if (conn === undefined || this.#pendingBody !== undefined) {
      if (this.#pendingBody === undefined) this.#pendingBody = [];
      this.#pendingBody.push(part);
      this.#pendingBytes += part.length;
      if (this.#pendingBytes > MAX_PENDING_BODY_BYTES) this.#sink.pauseBody();
      return;
    }
    if (!conn.socket.write(part) && this.#sink.pauseBody()) conn.socket.once('drain', this.#resumeBody);
  }

  /** The client sent the whole body. */
  bodySent(): void {
    if (this.#conn !== undefined && this.#pendingBody === undefined) this.#conn.requestSent = true;
  }

  onConnection(conn: UpstreamConnection | Error): void {
    if (this.#sink.closed() || this.#ticket === undefined) {
      if (!(conn instanceof Error)) conn.pool.release(conn, true);
      return;
    }
    if (conn instanceof Error) {
      this.#upstreamFailed(conn, false, true);
      return;
    }
    this.#attach(conn);
  }

  #attach(conn: UpstreamConnection): void {
    const req = this.#req as ExchangeRequest;
    this.#conn = conn;
    this.#attempts++;
    const socket = conn.socket;
    const pending = this.#pendingBody;
    const headOnly = req.method === 'HEAD';
    if (pending === undefined) {
      conn.send(this, req.upHead, headOnly, req.upgrade !== undefined);
    } else {
      socket.cork();
      conn.send(this, req.upHead, headOnly, req.upgrade !== undefined);
      this.#pendingBody = undefined;
      this.#pendingBytes = 0;
      let ok = true;
      for (const part of pending) ok = socket.write(part);
      socket.uncork();
      if (ok) {
        if (this.#sink.bodyPaused()) this.#sink.resumeBody();
      } else {
        this.#sink.pauseBody();
        socket.once('drain', this.#resumeBody);
      }
    }
    if (this.#sink.bodyDone()) conn.requestSent = true;
  }

  // ---- the response (ResponseSink) ----

  onResponseHead(head: ResponseHead): void {
    this.responded = true;
    this.#upReads++;
    const status = head.status;
    this.status = status;
    this.loadReport = loadReportHeader(head.headers, (this.#req as ExchangeRequest).cluster.readsReports);
    // Below 500 (the hot path) nothing more is asked: `retries.on` holds 5xx statuses only.
    if (status >= 500) {
      const limitBytes = (this.#req as ExchangeRequest).cluster.config.retryBufferBytes;
      if (withholds(this.#ticket, status, limitBytes, this.#request(false))) {
        this.#held = new WithheldResponse(head, limitBytes);
        return;
      }
    }
    this.#deliverHead(head);
  }

  #deliverHead(head: ResponseHead): void {
    this.#delivered = true;
    const req = this.#req as ExchangeRequest;
    this.#decoder = this.#sink.decoded && head.chunked && req.method !== 'HEAD' ? new ChunkedDecoder() : undefined;
    this.#sink.head(head);
  }

  onUpgrade(conn: UpstreamConnection, head: ResponseHead, rest: Buffer): void {
    this.#conn = undefined;
    this.responded = true;
    this.status = 101;
    const upgraded = this.#sink.upgraded;
    if (upgraded === undefined) {
      // Never asked for: the connection is of no use.
      conn.socket.destroy();
      this.#upstreamFailed(new EvenlbError(ErrorCodes.UPSTREAM_PROTOCOL, 'upstream switched protocols unasked'), true);
      return;
    }
    this.#endTicket('success');
    this.#sweep?.delete(this);
    upgraded.call(this.#sink, conn, head, rest);
  }

  onResponseBody(chunk: Buffer): void {
    this.#upReads++;
    const held = this.#held;
    if (held !== undefined) {
      if (!held.add(chunk)) this.#release();
      return;
    }
    const decoder = this.#decoder;
    if (decoder === undefined) this.#toSink(chunk);
    else decoder.decode(chunk, this.#toSink);
  }

  /** A withheld response goes to the client after all (too big to buffer, or no retry left). */
  #release(): void {
    const held = this.#held as Held;
    this.#held = undefined;
    this.#deliverHead(held.head);
    for (const part of held.parts) this.onResponseBody(part);
  }

  flush(): void {
    if (this.#held === undefined) this.#sink.flush();
  }

  onResponseEnd(): void {
    this.#conn = undefined;
    if (this.#held !== undefined) {
      // Withheld because the policy would retry it; when it no longer can, the response as it was.
      if (this.#retry({ type: 'status', status: this.status }, false)) return;
      this.#release();
    }
    const status = this.status;
    this.#endTicket(status >= 500 ? 'http-error' : 'success');
    this.#sweep?.delete(this);
    if (this.#sink.closed()) return;
    this.#sink.flush();
    this.#sink.end(status, this.#decoder?.trailers ?? NO_TRAILERS);
  }

  onUpstreamError(err: Error, responded: boolean): void {
    this.#upstreamFailed(err, responded);
  }

  #upstreamFailed(err: Error, responded: boolean, connectFailure = false): void {
    const conn = this.#conn;
    this.#conn = undefined;
    if (conn !== undefined && !conn.closed) conn.abort('error');
    const failure: AttemptFailure = connectFailure
      ? { type: 'connect-failure' }
      : classifyFailure(err, true, conn?.reused === true);
    if (this.#sink.closed()) {
      this.#endTicket(outcomeOf(failure));
      this.#sweep?.delete(this);
      return;
    }
    if (this.#delivered && this.#sink.started()) {
      // The client has part of a response: all that can be done is to cut it.
      this.#endTicket(outcomeOf(failure));
      this.#sweep?.delete(this);
      this.#sink.cut('upstream-cut');
      return;
    }
    // A withheld response was never shown: the client has seen nothing.
    const shown = (responded && this.#held === undefined) || this.#delivered;
    this.#held = undefined;
    if (this.#retry(failure, shown)) return;
    this.#finish(reasonForError(err));
  }

  /** The request ends with a local reply (nothing of a response was written). */
  #finish(reason: LocalReason): void {
    this.#sweep?.delete(this);
    if (!this.#sink.closed()) this.#sink.reply(reason);
  }

  /**
   * Ends the current attempt as failed by `failure` and sends the request again when the
   * cluster's one retry policy hands out another attempt (counted once, by the cluster). False
   * when it does not (the attempt is ended either way).
   */
  #retry(failure: AttemptFailure, responded: boolean): boolean {
    const ticket = this.#ticket;
    this.#ticket = undefined;
    if (ticket === undefined) return false;
    const next = ticket.retry(failure, this.#request(responded), this);
    if (next === undefined || next instanceof EvenlbError) return false;
    this.responded = false;
    this.#held = undefined;
    this.status = 0;
    this.loadReport = undefined;
    this.#send(next);
    return true;
  }

  #endTicket(outcome: RequestOutcome): void {
    const t = this.#ticket;
    if (t === undefined) return;
    this.#ticket = undefined;
    t.end(outcome, this);
  }

  /** Gives up on the upstream side of the request (client gone, malformed body, timeout). */
  abort(outcome: 'aborted' | 'transport-error'): void {
    const conn = this.#conn;
    this.#conn = undefined;
    const req = this.#req;
    if (conn !== undefined) conn.abort('error');
    else if (this.#ticket !== undefined && req !== undefined) {
      req.upstream.connectionFor(this.#ticket.endpoint, req.servername).cancel(this);
    }
    this.#endTicket(outcome);
    this.#sweep?.delete(this);
  }

  /**
   * The upstream deadlines, on a sweep: the hot path only counts attempts and reads; the sweep
   * notes when each last changed, so deadlines hold to within one sweep interval.
   */
  check(nowMs: number): void {
    const cfg = this.#req?.cluster.config;
    if (cfg === undefined || this.#conn === undefined) return;
    const t = this.#timing;
    if (t.attempt !== this.#attempts) {
      t.attempt = this.#attempts;
      t.attemptSinceMs = nowMs;
    }
    if (t.upReads !== this.#upReads) {
      t.upReads = this.#upReads;
      t.upQuietSinceMs = nowMs;
    }
    if (!this.responded) {
      if (cfg.requestTimeoutMs > 0 && nowMs - t.attemptSinceMs >= cfg.requestTimeoutMs) {
        this.#upstreamFailed(TIMEOUT_HEAD(), false);
      }
    } else if (cfg.bodyTimeoutMs > 0 && nowMs - t.upQuietSinceMs >= cfg.bodyTimeoutMs) {
      if (this.#held !== undefined) {
        // Nothing of the withheld response was shown: a timeout like any other.
        this.#upstreamFailed(TIMEOUT_HEAD(), true);
        return;
      }
      this.abort('transport-error');
      this.#sink.cut('timeout');
    }
  }
}
