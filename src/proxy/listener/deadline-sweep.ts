/**
 * One sweep per listener for deadlines: every connection on the raw HTTP/1.1 data path and every
 * exchange under way for another client protocol joins it, and is checked (`check(nowMs)`) once
 * per interval — no timer per request, no clock read on the hot path; the members count events
 * and the sweep notes when each last changed. The timer runs only while there are members, and
 * is `unref()`ed by the clock.
 */
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { SweepMembership, Swept } from '../http1/upstream-exchange.js';

export class DeadlineSweep implements SweepMembership {
  readonly #clock: Clock;
  readonly #intervalMs: number;
  readonly #members = new Set<Swept>();
  #timer: TimerHandle | undefined;
  #closed = false;

  /** Checks members every `intervalMs` on `clock`. */
  constructor(clock: Clock, intervalMs: number) {
    this.#clock = clock;
    this.#intervalMs = intervalMs;
  }

  get size(): number {
    return this.#members.size;
  }

  add(item: Swept): void {
    this.#members.add(item);
    if (this.#timer === undefined && !this.#closed) this.#arm();
  }

  delete(item: Swept): void {
    this.#members.delete(item);
  }

  #arm(): void {
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      if (this.#members.size === 0 || this.#closed) return;
      const now = this.#clock.now();
      for (const m of this.#members) m.check(now);
      this.#arm();
    }, this.#intervalMs);
  }

  /** Stops the sweep (members are left to their owners). Idempotent. */
  close(): void {
    this.#closed = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }
}
