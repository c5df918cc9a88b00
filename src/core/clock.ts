/**
 * Time, injected. `Clock` is the only way evenlb code reads time or schedules work, so tests
 * and the simulator can run the production code on virtual time. `systemClock` is the one
 * place that touches real time: monotonic milliseconds from `performance.now()`, timers
 * `unref()`ed so they never keep a process alive.
 */

/** A cancellable scheduled callback. */
export interface TimerHandle {
  cancel(): void;
}

/** A source of monotonic time in milliseconds and of timers on the same timeline. */
export interface Clock {
  /** Monotonic milliseconds (fractional); only differences are meaningful. */
  now(): number;
  /** Runs `fn` once after `delayMs` milliseconds of this clock's time. */
  setTimeout(fn: () => void, delayMs: number): TimerHandle;
}

/** True for an object that implements `Clock` (`now()` and `setTimeout()`); the one check option parsers use. */
export function isClock(value: unknown): value is Clock {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Clock).now === 'function' &&
    typeof (value as Clock).setTimeout === 'function'
  );
}

/** The real clock: `performance.now()` and unref'd Node timers. */
export const systemClock: Clock = Object.freeze({
  now: () => performance.now(),
  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    const t = setTimeout(fn, Math.max(0, delayMs));
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
});

/**
 * A manually advanced clock for tests: `advance(ms)` runs due timers in time order.
 *
 * @example
 * const clock = new ManualClock();
 * clock.setTimeout(() => console.log('fired'), 10);
 * clock.advance(10); // prints "fired"
 */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: { at: number; seq: number; fn: () => void; cancelled: boolean }[] = [];

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    const timer = { at: this.#now + Math.max(0, delayMs), seq: this.#seq++, fn, cancelled: false };
    this.#timers.push(timer);
    return { cancel: () => (timer.cancelled = true) };
  }

  /** Moves time forward by `ms` (finite, >= 0), firing every timer that falls due, in order. */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0)
      throw new RangeError(`ManualClock.advance: ms must be a finite number >= 0; received ${ms}`);
    const end = this.#now + ms;
    for (;;) {
      this.#timers = this.#timers.filter((t) => !t.cancelled);
      this.#timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.#timers[0];
      if (next === undefined || next.at > end) break;
      this.#timers.shift();
      this.#now = next.at;
      next.fn();
    }
    this.#now = end;
  }
}
