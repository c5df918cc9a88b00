/**
 * An HTTP/2 session. HTTP/2 can close a connection without racing the client: GOAWAY names the
 * last stream the server will process, and the client retries any later stream it sent
 * (grpc-js and grpc-go retry such refused streams transparently).
 *
 * - Request limit: the Nth stream's arrival sends GOAWAY(NO_ERROR, that stream's id) and
 *   starts a graceful `close()`. Streams the client opened after it are refused with
 *   `REFUSED_STREAM` and never reach the application: exactly N streams are served.
 * - Age, drain: GOAWAY(NO_ERROR, 2^31-1) first (stop opening streams), then a PING; once the
 *   PING is answered (or the last open stream ends, or the client sends its own GOAWAY), every
 *   stream the client sent before it saw the GOAWAY has arrived and is being served, so
 *   `close()` refuses nothing the client still expects (grpc-go's sequence). A session with no
 *   open stream is closed right after the first GOAWAY.
 * - Idle: `close()` at once.
 *
 * `close()` lets the admitted streams finish; only `graceMs` (or the drain's grace) destroys.
 */
import http2 from 'node:http2';
import type { TimerHandle } from '../core/clock.js';
import type { CloseReason } from '../pool/lifetime-policy.js';
import { type ConnectionHost, TrackedConnection } from './tracked-connection.js';

const { NGHTTP2_NO_ERROR, NGHTTP2_REFUSED_STREAM } = http2.constants;
/** The largest stream id: "every stream you opened so far will be processed". */
const MAX_STREAM_ID = 2 ** 31 - 1;
/** How long to wait for the PING answer before closing anyway. */
const PING_TIMEOUT_MS = 1000;

const ignore = (): void => {};

export class Http2Connection extends TrackedConnection {
  readonly protocol = 'h2' as const;
  readonly session: http2.ServerHttp2Session;
  /** Set when a GOAWAY named a real last stream: later streams are refused. */
  #lastStreamId: number | undefined;
  #pingTimer: TimerHandle | undefined;
  /** `session.close()` was called (GOAWAY with the last processed stream sent). */
  #closeSent = false;

  constructor(host: ConnectionHost, session: http2.ServerHttp2Session) {
    super(host);
    this.session = session;
    session.once('close', () => {
      this.#pingTimer?.cancel();
      this.markClosed();
    });
  }

  /**
   * A stream arrived. Returns false when it was refused (opened after the GOAWAY that ended the
   * connection's request budget); the caller then does not emit it.
   */
  admit(stream: http2.ServerHttp2Stream): boolean {
    if (this.#lastStreamId !== undefined && (stream.id ?? 0) > this.#lastStreamId) {
      stream.on('error', ignore);
      if (!stream.destroyed) stream.close(NGHTTP2_REFUSED_STREAM);
      return false;
    }
    this.requestStarted();
    stream.once('close', () => this.requestEnded());
    if (this.host.settings.policy.isLastRequest(this.requests)) {
      this.#lastStreamId = stream.id ?? MAX_STREAM_ID;
      this.retire('requests');
    }
    return true;
  }

  protected onRetire(reason: CloseReason): void {
    const session = this.session;
    if (session.closed || session.destroyed) return;
    if (reason === 'requests' && this.#lastStreamId !== undefined) {
      session.goaway(NGHTTP2_NO_ERROR, this.#lastStreamId);
      this.#close();
      return;
    }
    if (reason === 'idle') {
      this.#close();
      return;
    }
    session.goaway(NGHTTP2_NO_ERROR, MAX_STREAM_ID);
    // With no stream open, a client that got GOAWAY neither reads nor writes any more (nghttp2
    // considers the session finished), so it would never answer a PING: close at once. A
    // stream it opened meanwhile is refused and retried.
    if (this.inFlight === 0) {
      this.#close();
      return;
    }
    this.#pingTimer = this.host.settings.clock.setTimeout(() => this.#close(), PING_TIMEOUT_MS);
    // A client that answers with its own GOAWAY has stopped opening streams: no need to wait.
    session.once('goaway', () => this.#close());
    try {
      if (!session.ping(() => this.#close())) this.#close();
    } catch {
      this.#close();
    }
  }

  /** While waiting for the PING answer, the last stream ending is as good a moment to close. */
  protected onRetiringTick(): void {
    if (this.inFlight === 0) this.#close();
  }

  protected retiringTickInMs(): number | undefined {
    return this.#closeSent || this.inFlight > 0 ? undefined : 0;
  }

  #close(): void {
    if (this.#closeSent) return;
    this.#closeSent = true;
    this.#pingTimer?.cancel();
    const session = this.session;
    if (!session.closed && !session.destroyed) session.close();
  }

  protected destroyTransport(): void {
    this.session.destroy();
  }
}
