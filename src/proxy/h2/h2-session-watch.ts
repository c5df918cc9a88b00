/**
 * Deadlines of one client HTTP/2 session, checked on the listener's sweep: a session with no
 * open stream for `h2IdleTimeoutMs` gets GOAWAY and closes; every `h2PingIntervalMs` a PING is
 * sent, and a session whose PING is not answered within `h2PingTimeoutMs` is destroyed (a peer
 * that vanished without a FIN). Each close is reported with its reason.
 */
import http2, { type Http2Session } from 'node:http2';
import type { ListenerLimits } from '../config/config-schema.js';
import type { Swept } from '../http1/upstream-exchange.js';

export class H2SessionWatch implements Swept {
  readonly #session: Http2Session;
  readonly #limits: ListenerLimits;
  readonly #closedBy: (reason: 'h2-idle' | 'h2-ping') => void;
  #streams = 0;
  /** Bumped when the stream count changes; the sweep notes when it last did. */
  #events = 0;
  #seen = -1;
  #quietSinceMs = 0;
  #lastPingMs: number;
  #pingOutstanding = false;

  constructor(
    session: Http2Session,
    limits: ListenerLimits,
    nowMs: number,
    closedBy: (reason: 'h2-idle' | 'h2-ping') => void,
  ) {
    this.#session = session;
    this.#limits = limits;
    this.#closedBy = closedBy;
    this.#lastPingMs = nowMs;
    this.#quietSinceMs = nowMs;
    session.on('stream', (stream: http2.ServerHttp2Stream) => {
      this.#streams++;
      this.#events++;
      stream.once('close', () => {
        this.#streams--;
        this.#events++;
      });
    });
  }

  /** No stream is open. */
  get idle(): boolean {
    return this.#streams === 0;
  }

  check(nowMs: number): void {
    const s = this.#session;
    if (s.closed || s.destroyed) return;
    if (this.#seen !== this.#events) {
      this.#seen = this.#events;
      this.#quietSinceMs = nowMs;
    }
    const limits = this.#limits;
    if (this.#streams === 0 && nowMs - this.#quietSinceMs >= limits.h2IdleTimeoutMs) {
      this.#closedBy('h2-idle');
      s.goaway(http2.constants.NGHTTP2_NO_ERROR);
      s.close();
      return;
    }
    if (limits.h2PingIntervalMs <= 0) return;
    if (this.#pingOutstanding) {
      if (nowMs - this.#lastPingMs >= limits.h2PingTimeoutMs) {
        this.#closedBy('h2-ping');
        s.destroy();
      }
      return;
    }
    if (nowMs - this.#lastPingMs >= limits.h2PingIntervalMs) {
      this.#lastPingMs = nowMs;
      this.#pingOutstanding = true;
      try {
        s.ping((err) => {
          if (err === null) this.#pingOutstanding = false;
        });
      } catch {
        this.#pingOutstanding = false;
      }
    }
  }
}
