/**
 * The upstream side of one request on the HTTP/1.1 data path (`UpstreamExchange`, one per
 * downstream connection, reused request after request): it takes an attempt from the cluster
 * (`Cluster.acquire`), a socket of the picked endpoint from the proxy's one HTTP/1.1 pool
 * (`Http1Upstream`), writes the request head and body bytes (held while the socket connects,
 * with backpressure both ways), and writes the response back to the client in framing of the
 * proxy's own choosing. A failure is handed to the attempt (`attempt.retry(failure, request)`):
 * the cluster's one retry policy says whether the request goes again and where, and counts it.
 * A response with a `retryOn` status is withheld only when the attempt says it would be retried.
 *
 * It also checks the upstream deadlines on the listener's sweep: the response head
 * (`requestTimeoutMs`, a 504 unless a retry answers) and the body's idle limit (`bodyTimeoutMs`).
 */
import type { Socket } from 'node:net';
import type { Attempt, AttemptRequest } from '../../cluster/attempt.js';
import { clusterInternals } from '../../cluster/cluster-internals.js';
import type { RequestOutcome } from '../../cluster/cluster-options.js';
import { type AttemptFailure, classifyFailure, outcomeOf } from '../../cluster/retry-policy.js';
import { EvenlbError } from '../../core/errors.js';
import { downstreamRawHeaders, serializeHeaders } from '../hop-headers.js';
import { statusForError } from '../local-reply.js';
import type { ProxyCluster } from '../proxy-cluster.js';
import type { ResponseHead } from './message-head.js';
import type { ForwardRoute } from './request-route.js';
import type { Http1Upstream, ResponseSink, UpstreamConnection } from './upstream-pool.js';

/** What an exchange needs from its downstream connection. */
export interface ExchangeOwner {
  readonly socket: Socket;
  /** The client connection is closed (or handed over). */
  closed(): boolean;
  /** The whole request body has been read from the client (or there was none). */
  bodyDone(): boolean;
  closeAfter(): boolean;
  /** The client connection closes after this response. */
  setCloseAfter(): void;
  paused(): boolean;
  /** Stops reading the client; false when it was already paused. */
  pauseClient(): boolean;
  resumeClient(): void;
  /** Counts and logs the request's outcome. */
  answered(status: number, reason: string | undefined): void;
  /** A local reply (nothing of a response was written yet). */
  failRequest(status: number, reason: string): void;
  /** The response is complete: next request, or close. */
  next(): void;
  /** The client has part of a response that cannot be completed: cut the connection. */
  cut(reason: string): void;
  /** The upstream timed out sending the body: cut both. */
  abortAll(): void;
  /** The upstream switched protocols: tunnel from now on. */
  upgraded(conn: UpstreamConnection, head: ResponseHead, rest: Buffer): void;
}

/** Request body bytes held while the upstream socket connects before the client is paused. */
const MAX_PENDING_BODY_BYTES = 64 * 1024;
/** Response bodies up to this size leave in the same write as their head. */
const COALESCE_BYTES = 16 * 1024;

export class UpstreamExchange implements ResponseSink {
  readonly #owner: ExchangeOwner;
  readonly #client: Socket;
  /** The current request's cluster; undefined between requests. */
  cluster: ProxyCluster | undefined;
  #upstream: Http1Upstream | undefined;
  #servername = '';
  #method = '';
  #hasBody = false;
  /** The protocols the current request asks to switch to (WebSocket...); undefined for plain requests. */
  upgrade: string | undefined;
  #upHead = '';
  #ticket: Attempt | undefined;
  #conn: UpstreamConnection | undefined;
  #status = 0;
  /** A response byte arrived for the current attempt. */
  responded = false;
  /** A response head not written yet (see `onResponseHead`). */
  #headOut: string | undefined;
  #swallow = false;
  #pendingBody: Buffer[] | undefined;
  #pendingBytes = 0;
  /** Upstream attempts (a retry is a new attempt) and upstream reads, for the sweep. */
  #attempts = 0;
  #upReads = 0;
  readonly #timing = { attempt: 0, attemptSinceMs: 0, upReads: 0, upQuietSinceMs: 0 };
  readonly #resumeClient: () => void;
  readonly #resumeUpstream = (): void => {
    this.#conn?.socket.resume();
  };

  constructor(owner: ExchangeOwner) {
    this.#owner = owner;
    this.#client = owner.socket;
    this.#resumeClient = () => owner.resumeClient();
  }

  /** An attempt or a socket is in use for the current request. */
  get active(): boolean {
    return this.#ticket !== undefined || this.#conn !== undefined;
  }

  /** Prepares a request for `route`; body bytes may follow (`forward`) before `send()`. */
  start(route: ForwardRoute, method: string, hasBody: boolean): void {
    this.cluster = route.cluster;
    this.#upstream = route.upstream;
    this.#servername = route.servername;
    this.upgrade = route.upgrade;
    this.#upHead = route.upHead;
    this.#method = method;
    this.#hasBody = hasBody;
    this.#status = 0;
    this.responded = false;
    this.#swallow = false;
  }

  /** Sends the prepared request: the first attempt from the cluster. */
  send(): void {
    this.#send(clusterInternals((this.cluster as ProxyCluster).cluster).acquire());
  }

  /** The request is over (answered or given up): forget it. */
  reset(): void {
    this.cluster = undefined;
    this.#upstream = undefined;
    this.#pendingBody = undefined;
    this.#pendingBytes = 0;
  }

  #send(attempt: Attempt | EvenlbError): void {
    if (attempt instanceof EvenlbError) {
      const { status, reason } = statusForError(attempt);
      this.#owner.failRequest(status, reason);
      return;
    }
    this.#ticket = attempt;
    const conn = (this.#upstream as Http1Upstream).connectionFor(attempt.endpoint, this.#servername).acquire(this);
    if (conn !== undefined) this.#attach(conn);
  }

  /** What the cluster's retry policy reads about the current request. */
  #request(responded: boolean): AttemptRequest {
    // The body is streamed, not kept: only a bodiless request can be sent twice. (A connect
    // failure is retried anyway: nothing was written, the body is still held.)
    return { method: this.#method, replayable: !this.#hasBody, responded };
  }

  // ---- the request ----

  /** Request body bytes to the upstream, or held until its socket is connected. */
  forward(part: Buffer): void {
    const conn = this.#conn;
    if (conn === undefined || this.#pendingBody !== undefined) {
      if (this.#pendingBody === undefined) this.#pendingBody = [];
      this.#pendingBody.push(part);
      this.#pendingBytes += part.length;
      if (this.#pendingBytes > MAX_PENDING_BODY_BYTES) this.#owner.pauseClient();
      return;
    }
    if (!conn.socket.write(part) && this.#owner.pauseClient()) conn.socket.once('drain', this.#resumeClient);
  }

  /** The client sent the whole body. */
  bodySent(): void {
    if (this.#conn !== undefined && this.#pendingBody === undefined) this.#conn.requestSent = true;
  }

  onConnection(conn: UpstreamConnection | Error): void {
    if (this.#owner.closed() || this.#ticket === undefined) {
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
    this.#conn = conn;
    this.#attempts++;
    const socket = conn.socket;
    const pending = this.#pendingBody;
    if (pending === undefined) {
      conn.send(this, this.#upHead, this.#method === 'HEAD', this.upgrade !== undefined);
    } else {
      socket.cork();
      conn.send(this, this.#upHead, this.#method === 'HEAD', this.upgrade !== undefined);
      this.#pendingBody = undefined;
      this.#pendingBytes = 0;
      let ok = true;
      for (const part of pending) ok = socket.write(part);
      socket.uncork();
      if (ok) {
        if (this.#owner.paused()) this.#owner.resumeClient();
      } else {
        this.#owner.pauseClient();
        socket.once('drain', this.#resumeClient);
      }
    }
    if (this.#owner.bodyDone()) conn.requestSent = true;
  }

  // ---- the response (ResponseSink) ----

  onResponseHead(head: ResponseHead): void {
    this.responded = true;
    this.#upReads++;
    const status = head.status;
    this.#status = status;
    const ticket = this.#ticket;
    if (status >= 500 && ticket !== undefined && ticket.wouldRetry({ type: 'status', status }, this.#request(false))) {
      this.#swallow = true;
      return;
    }
    const owner = this.#owner;
    // The framing the client sees is written here from what the parser decided, never copied:
    // one Content-Length, or chunked, or no length and the connection closes after the body.
    let extra = '';
    if (status === 204 || status < 200) {
      // no body and no framing header
    } else if (head.chunked) {
      extra = `transfer-encoding: ${head.transferEncoding}\r\n`;
    } else if (head.transferEncoding === undefined && head.contentLength >= 0) {
      extra = `content-length: ${head.contentLength}\r\n`;
    } else if (!(this.#method === 'HEAD' || status === 304)) {
      // Ends when the upstream closes: so must the client connection.
      owner.setCloseAfter();
    }
    // A response before the whole request arrived: the rest of the request cannot be read.
    if (!owner.bodyDone()) owner.setCloseAfter();
    if (owner.closeAfter()) extra += 'connection: close\r\n';
    const list = downstreamRawHeaders(head.headers, '1.1');
    // Held until the first body bytes (or the end): a small response leaves in one write.
    this.#headOut = `HTTP/1.1 ${status} ${head.statusText}\r\n${serializeHeaders(list)}${extra}\r\n`;
  }

  onUpgrade(conn: UpstreamConnection, head: ResponseHead, rest: Buffer): void {
    this.#conn = undefined;
    this.responded = true;
    this.#status = 101;
    this.#endTicket('success');
    this.#owner.upgraded(conn, head, rest);
  }

  onResponseBody(chunk: Buffer): void {
    if (this.#swallow) return;
    this.#upReads++;
    const client = this.#client;
    let ok: boolean;
    const head = this.#headOut;
    if (head === undefined) ok = client.write(chunk);
    else {
      this.#headOut = undefined;
      if (chunk.length <= COALESCE_BYTES) {
        const out = Buffer.allocUnsafe(head.length + chunk.length);
        out.write(head, 0, 'latin1');
        chunk.copy(out, head.length);
        ok = client.write(out);
      } else {
        client.write(head, 'latin1');
        ok = client.write(chunk);
      }
    }
    if (!ok) {
      const conn = this.#conn;
      if (conn !== undefined) {
        conn.socket.pause();
        client.once('drain', this.#resumeUpstream);
      }
    }
  }

  flush(): void {
    const head = this.#headOut;
    if (head !== undefined) {
      this.#headOut = undefined;
      this.#client.write(head, 'latin1');
    }
  }

  onResponseEnd(): void {
    this.#conn = undefined;
    if (this.#swallow) {
      this.#swallow = false;
      // Withheld because the policy would retry it; if it no longer can, nothing of the answer is left to show.
      if (!this.#retry({ type: 'status', status: this.#status }, false)) this.#owner.failRequest(502, 'upstream-error');
      return;
    }
    const status = this.#status;
    this.#endTicket(status >= 500 ? 'http-error' : 'success');
    this.#owner.answered(status, undefined);
    this.#owner.next();
  }

  onUpstreamError(err: Error, responded: boolean): void {
    this.#upstreamFailed(err, responded);
  }

  #upstreamFailed(err: Error, responded: boolean, connectFailure = false): void {
    const conn = this.#conn;
    this.#conn = undefined;
    if (conn !== undefined && !conn.closed) conn.abort('error');
    // A response head still held (no body byte was forwarded) was never sent: the client gets
    // a 502 instead of a cut connection.
    const held = this.#headOut !== undefined;
    this.#headOut = undefined;
    const failure: AttemptFailure = connectFailure
      ? { type: 'connect-failure' }
      : classifyFailure(err, true, conn?.reused === true);
    if (this.#owner.closed()) {
      this.#endTicket(outcomeOf(failure));
      return;
    }
    if (this.responded && !this.#swallow && !held) {
      // The client has part of a response: all that can be done is to cut it.
      this.#endTicket(outcomeOf(failure));
      this.#owner.cut('upstream-error');
      return;
    }
    if (this.#retry(failure, responded && !this.#swallow)) return;
    const { status, reason } = statusForError(err);
    this.#owner.failRequest(status, reason);
  }

  /**
   * Ends the current attempt as failed by `failure` and sends the request again when the
   * cluster's one retry policy hands out another attempt (counted once, by the cluster). False
   * when it does not (the attempt is ended either way); a local reply has been sent when the
   * cluster named why (`EVENLB_NO_ENDPOINTS`...).
   */
  #retry(failure: AttemptFailure, responded: boolean): boolean {
    const ticket = this.#ticket;
    this.#ticket = undefined;
    if (ticket === undefined) return false;
    const next = ticket.retry(failure, this.#request(responded));
    if (next === undefined) return false;
    this.responded = false;
    this.#swallow = false;
    this.#status = 0;
    this.#send(next);
    return true;
  }

  #endTicket(outcome: RequestOutcome): void {
    const t = this.#ticket;
    if (t === undefined) return;
    this.#ticket = undefined;
    t.end(outcome);
  }

  /** Gives up on the upstream side of the request (client gone, malformed body, timeout). */
  abort(outcome: 'aborted' | 'transport-error'): void {
    const conn = this.#conn;
    this.#conn = undefined;
    if (conn !== undefined) conn.abort('error');
    else if (this.#ticket !== undefined && this.#upstream !== undefined) {
      this.#upstream.connectionFor(this.#ticket.endpoint, this.#servername).cancel(this);
    }
    this.#endTicket(outcome);
  }

  /**
   * The upstream deadlines, on the listener's sweep: the hot path only counts attempts and
   * reads; the sweep notes when each last changed.
   */
  check(nowMs: number): void {
    const cfg = this.cluster?.config;
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
        this.#upstreamFailed(new EvenlbError('EVENLB_TIMEOUT', 'upstream sent no response head in time'), false);
      }
    } else if (cfg.bodyTimeoutMs > 0 && nowMs - t.upQuietSinceMs >= cfg.bodyTimeoutMs) {
      this.#owner.abortAll();
    }
  }
}
