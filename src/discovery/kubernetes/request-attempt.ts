/**
 * One API request's abort controller and timer. Until the response headers arrive (and for a
 * LIST, its whole body) the timer is a deadline; once a watch stream is open it becomes an idle
 * timer that `touch()` (every received line) pushes back, so a silent watch is torn down, and
 * a lifetime that ends a watch the server should have ended itself. `reason` records why the
 * request was aborted, so the caller can tell a deadline, a silent watch, an overlong watch and
 * its own `close()` from a network error.
 */
import type { Clock, TimerHandle } from '../../core/clock.js';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';

export type AbortReason = 'timeout' | 'idle' | 'lifetime' | 'closed';

export class RequestAttempt {
  readonly controller = new AbortController();
  reason: AbortReason | undefined;
  #timer: TimerHandle | undefined;
  #lifetime: TimerHandle | undefined;
  #lastActivityMs = 0;
  readonly #clock: Clock;

  constructor(clock: Clock, timeoutMs: number) {
    this.#clock = clock;
    this.#timer = clock.setTimeout(() => this.abort('timeout'), timeoutMs);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /**
   * Replaces the request deadline with an idle timer reset by `touch()`, and ends the stream
   * after `lifetimeMs` whatever it delivers (reason `lifetime`).
   */
  watchIdle(idleMs: number, lifetimeMs = Number.POSITIVE_INFINITY): void {
    this.#timer?.cancel();
    if (Number.isFinite(lifetimeMs)) {
      this.#lifetime = this.#clock.setTimeout(() => this.abort('lifetime'), lifetimeMs);
    }
    this.#lastActivityMs = this.#clock.now();
    const arm = (delayMs: number): void => {
      this.#timer = this.#clock.setTimeout(() => {
        const silentMs = this.#clock.now() - this.#lastActivityMs;
        if (silentMs >= idleMs) this.abort('idle');
        else arm(idleMs - silentMs);
      }, delayMs);
    };
    arm(idleMs);
  }

  touch(): void {
    this.#lastActivityMs = this.#clock.now();
  }

  abort(reason: AbortReason): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    this.#timer?.cancel();
    this.#lifetime?.cancel();
    this.controller.abort(new EvenlbError(ErrorCodes.TIMEOUT, `request aborted: ${reason}`));
  }

  dispose(): void {
    this.#timer?.cancel();
    this.#lifetime?.cancel();
  }
}
