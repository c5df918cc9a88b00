/**
 * An HTTP/1.x keep-alive connection. A connection closes only at a response boundary the
 * client can see: the response that reaches a limit is sent with `Connection: close` (decided
 * before its headers are written) and the socket closes once it is finished. Requests the client
 * pipelined behind that response are never handed to the application — the socket closes
 * without answering them, which tells the client they were not processed (RFC 9112 §9.3.2) —
 * so exactly `maxRequestsPerConnection` requests are served per connection.
 *
 * A connection that reaches its age while a response whose headers are already out is in
 * flight closes after its *next* response; if none comes, it is closed once it has been idle
 * for `idleCloseDelayMs` (HTTP/1 cannot close an idle connection without racing a client that
 * is writing to it; waiting until it has been quiet makes that race unlikely).
 */
import type http from 'node:http';
import type net from 'node:net';
import type { CloseReason } from '../pool/lifetime-policy.js';
import { type ConnectionHost, TrackedConnection } from './tracked-connection.js';

export class Http1Connection extends TrackedConnection {
  readonly protocol = 'http1' as const;
  readonly socket: net.Socket;
  /** Responses of the requests in flight, oldest first (several when the client pipelines). */
  readonly #pending: http.ServerResponse[] = [];
  /** A response carrying `Connection: close` is in flight: nothing after it is served. */
  #closeQueued = false;

  constructor(host: ConnectionHost, socket: net.Socket) {
    super(host);
    this.socket = socket;
    socket.once('close', () => this.markClosed());
  }

  /**
   * A request arrived. Returns false when it must not be served (it was pipelined behind the
   * response that closes the connection); the caller then does not emit it.
   */
  admit(req: http.IncomingMessage, res: http.ServerResponse): boolean {
    if (this.#closeQueued || this.closed) {
      req.resume();
      return false;
    }
    const { policy, clock } = this.host.settings;
    const before = policy.canCarryAnother(this, clock.now());
    this.requestStarted();
    this.#pending.push(res);
    res.once('close', () => {
      const i = this.#pending.indexOf(res);
      if (i >= 0) this.#pending.splice(i, 1);
      this.requestEnded();
    });

    let reason: CloseReason | undefined;
    if (policy.isLastRequest(this.requests)) reason = 'requests';
    else if (this.retiring !== undefined) reason = this.retiring;
    else if (before.type === 'retire' && before.reason === 'age') reason = 'age';
    else if (this.host.draining) reason = 'shutdown';

    if (reason !== undefined) {
      this.#closeAfter(res);
      this.retire(reason);
    } else if (!res.shouldKeepAlive) {
      // The client asked for `Connection: close` (or spoke HTTP/1.0): this is its last request.
      this.#closeQueued = true;
    }
    return true;
  }

  protected onRetire(reason: CloseReason): void {
    if (this.#closeQueued) return;
    const last = this.#pending.at(-1);
    if (last !== undefined && !last.headersSent) {
      this.#closeAfter(last);
      return;
    }
    if (this.inFlight === 0 && (reason === 'idle' || this.#idleLongEnough(this.host.settings.clock.now()))) {
      this.destroy(reason);
    }
  }

  protected onRetiringTick(nowMs: number): void {
    if (!this.#closeQueued && this.inFlight === 0 && this.#idleLongEnough(nowMs)) {
      this.destroy(this.retiring ?? 'peer');
      return;
    }
    this.arm();
  }

  protected retiringTickInMs(nowMs: number): number | undefined {
    if (this.#closeQueued || this.inFlight > 0) return undefined;
    return Math.max(0, this.idleSinceMs + this.host.settings.options.idleCloseDelayMs - nowMs);
  }

  protected destroyTransport(): void {
    this.socket.destroy();
  }

  #idleLongEnough(nowMs: number): boolean {
    return nowMs - this.idleSinceMs >= this.host.settings.options.idleCloseDelayMs;
  }

  /** Makes `res` the connection's last response: `Connection: close`, then close the socket. */
  #closeAfter(res: http.ServerResponse): void {
    this.#closeQueued = true;
    // Read when the headers are written: Node then sends `Connection: close` and ends the socket.
    res.shouldKeepAlive = false;
    res.once('finish', () => {
      // Also when the application forced `Connection: keep-alive`: the decision stands.
      if (!this.socket.destroyed) this.socket.destroySoon();
    });
  }
}
