/**
 * `Clock` on the simulator's virtual time. Production code that reads `clock.now()` (load
 * records, peak-EWMA decay) or arms `clock.setTimeout()` runs unchanged inside the
 * simulator: time is the scheduler's, and a timer is an event in its queue. Cancelled timers
 * stay queued but are skipped when they come due (the callback slot is emptied and reused).
 */
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { Scheduler } from './scheduler.js';

export class VirtualClock implements Clock {
  readonly #scheduler: Scheduler;
  readonly #kind: number;
  readonly #callbacks: ((() => void) | undefined)[] = [];
  readonly #generations: number[] = [];
  readonly #free: number[] = [];

  /**
   * @example
   * const scheduler = new Scheduler();
   * const clock = new VirtualClock(scheduler);
   * clock.setTimeout(() => console.log(clock.now()), 250);
   * scheduler.runUntil(1000); // prints 250
   */
  constructor(scheduler: Scheduler) {
    this.#scheduler = scheduler;
    this.#kind = scheduler.register((slot, generation) => this.#fire(slot, generation));
  }

  now(): number {
    return this.#scheduler.now;
  }

  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    const slot = this.#free.pop() ?? this.#callbacks.length;
    const generation = (this.#generations[slot] ?? 0) + 1;
    this.#generations[slot] = generation;
    this.#callbacks[slot] = fn;
    this.#scheduler.after(Number.isFinite(delayMs) ? delayMs : 0, this.#kind, slot, generation);
    return {
      cancel: () => {
        if (this.#generations[slot] === generation && this.#callbacks[slot] !== undefined) this.#release(slot);
      },
    };
  }

  /** Timers armed and not yet fired or cancelled. */
  get pendingTimers(): number {
    return this.#callbacks.length - this.#free.length;
  }

  #fire(slot: number, generation: number): void {
    if (this.#generations[slot] !== generation) return;
    const fn = this.#callbacks[slot];
    if (fn === undefined) return;
    this.#release(slot);
    fn();
  }

  #release(slot: number): void {
    this.#callbacks[slot] = undefined;
    // Bump the generation so the queued event of a cancelled timer is recognised as stale
    // even after the slot is reused.
    this.#generations[slot] = (this.#generations[slot] ?? 0) + 1;
    this.#free.push(slot);
  }
}
