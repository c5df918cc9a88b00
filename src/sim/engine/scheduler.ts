/**
 * The simulator's event loop. Components register a handler once and get back an event
 * kind; they schedule events of that kind with two integer arguments (an index and, usually,
 * a generation number so a stale event can be recognised and ignored — cheaper than
 * cancelling inside the heap). `runUntil()` pops events in time order, advances virtual time
 * to each one and calls its handler. Nothing here reads real time.
 */
import { EventQueue } from './event-queue.js';

/** Handles one event: `a` and `b` are the integers given when it was scheduled. */
export type EventHandler = (a: number, b: number) => void;

export class Scheduler {
  readonly #queue = new EventQueue();
  readonly #handlers: EventHandler[] = [];
  #now = 0;
  #processed = 0;
  #stopped = false;

  /** Virtual time in ms. */
  get now(): number {
    return this.#now;
  }

  /** Events handled so far. */
  get processed(): number {
    return this.#processed;
  }

  /** Events waiting. */
  get pending(): number {
    return this.#queue.size;
  }

  /** Registers a handler; returns the event kind to schedule it with. */
  register(handler: EventHandler): number {
    this.#handlers.push(handler);
    return this.#handlers.length - 1;
  }

  /** Schedules an event at absolute time `timeMs` (clamped to now: the past is gone). */
  at(timeMs: number, kind: number, a = 0, b = 0): void {
    this.#queue.push(Math.max(timeMs, this.#now), kind, a, b);
  }

  /** Schedules an event `delayMs` from now (negative delays count as 0). */
  after(delayMs: number, kind: number, a = 0, b = 0): void {
    this.#queue.push(delayMs > 0 ? this.#now + delayMs : this.#now, kind, a, b);
  }

  /** Makes the running `runUntil` return after the current event. */
  stop(): void {
    this.#stopped = true;
  }

  /**
   * Runs events due at or before `endMs` (or until `stop()`), then leaves the clock at `endMs`
   * if it got there. `onTick` is called every `tickEvery` events (progress reporting).
   * Returns true when it reached `endMs` (or ran out of events), false when stopped.
   */
  runUntil(endMs: number, onTick?: () => void, tickEvery = 1 << 16): boolean {
    const q = this.#queue;
    const handlers = this.#handlers;
    this.#stopped = false;
    let untilTick = tickEvery;
    while (q.size !== 0 && q.peekTime() <= endMs) {
      q.pop();
      this.#now = q.time;
      this.#processed++;
      (handlers[q.kind] as EventHandler)(q.a, q.b);
      if (--untilTick === 0) {
        untilTick = tickEvery;
        onTick?.();
      }
      if (this.#stopped) return false;
    }
    if (Number.isFinite(endMs) && endMs > this.#now) this.#now = endMs;
    return true;
  }
}
