/**
 * The deadlines of one connection on the raw HTTP/1.1 data path, as the listener's sweep sees
 * them. The connection only counts (reads and finished responses, request heads); on each sweep
 * this notes when a count last changed and says which deadline, if any, has passed: a partial
 * head past `headersTimeoutMs`, a quiet keep-alive connection past `idleTimeoutMs` (or past its
 * recycling age once quiet a moment), a request body past `requestTimeoutMs` overall or quiet
 * past `bodyReadTimeoutMs` while the client was not paused by the proxy itself.
 */
import type { ListenerLimits } from '../config/config-schema.js';

/** A recycled connection past its age closes once it has been quiet this long. */
const IDLE_CLOSE_DELAY_MS = 250;

/** What the connection is doing, as the sweep reads it. */
export interface DownstreamView {
  /** Between requests (`head`), reading a request body (`body`), or waiting for the response (`wait`). */
  readonly phase: 'head' | 'body' | 'wait';
  /** Bytes of a next request head are buffered. */
  readonly partialHead: boolean;
  /** Client reads and finished responses so far. */
  readonly events: number;
  /** Request heads parsed so far. */
  readonly heads: number;
  /** The proxy paused reading the client (back-pressure). */
  readonly paused: boolean;
}

export type DeadlineVerdict = 'none' | 'request-head' | 'idle' | 'aged' | 'request' | 'request-body';

export class DownstreamDeadlines {
  readonly #limits: ListenerLimits;
  readonly #openedAtMs: number;
  readonly #maxAgeMs: number | undefined;
  #events = 0;
  #quietSinceMs: number;
  #headSeq = 0;
  #headSinceMs = 0;
  #bodySeq = 0;
  #bodySinceMs = 0;

  /** `maxAgeMs`: the recycling age drawn for the connection, if any. */
  constructor(limits: ListenerLimits, openedAtMs: number, maxAgeMs: number | undefined) {
    this.#limits = limits;
    this.#openedAtMs = openedAtMs;
    this.#quietSinceMs = openedAtMs;
    this.#maxAgeMs = maxAgeMs;
  }

  /** The recycling age has passed. */
  aged(nowMs: number): boolean {
    return this.#maxAgeMs !== undefined && nowMs - this.#openedAtMs >= this.#maxAgeMs;
  }

  /** Which deadline has passed at `nowMs` for a connection in state `v`. */
  check(nowMs: number, v: DownstreamView): DeadlineVerdict {
    if (this.#events !== v.events) {
      this.#events = v.events;
      this.#quietSinceMs = nowMs;
    }
    const limits = this.#limits;
    const quietMs = nowMs - this.#quietSinceMs;
    if (v.phase === 'head') {
      if (v.partialHead) {
        // A partial head of the next request: time it from when it was first seen.
        if (this.#headSeq !== v.heads + 1) {
          this.#headSeq = v.heads + 1;
          this.#headSinceMs = nowMs;
          return 'none';
        }
        return nowMs - this.#headSinceMs >= limits.headersTimeoutMs ? 'request-head' : 'none';
      }
      if (quietMs >= limits.idleTimeoutMs) return 'idle';
      return this.aged(nowMs) && quietMs >= IDLE_CLOSE_DELAY_MS ? 'aged' : 'none';
    }
    if (v.phase !== 'body') return 'none';
    if (this.#bodySeq !== v.heads) {
      this.#bodySeq = v.heads;
      this.#bodySinceMs = nowMs;
    } else if (limits.requestTimeoutMs > 0 && nowMs - this.#bodySinceMs >= limits.requestTimeoutMs) return 'request';
    // A client the proxy paused (back-pressure) is not stalling.
    if (!v.paused && limits.bodyReadTimeoutMs > 0 && quietMs >= limits.bodyReadTimeoutMs) return 'request-body';
    return 'none';
  }
}
