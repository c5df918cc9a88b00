/**
 * Before discovery's first answer a cluster cannot pick: requests sent meanwhile wait here, each
 * up to `discoveryTimeoutMs`, then fail with the cluster's `EVENLB_DISCOVERY_PENDING` error;
 * the first answer hands them all back to be routed. `whenAnswered()` waits the same way for a
 * caller that only wants to know. Every timer is the cluster's clock's, so tests run it on a
 * `ManualClock`.
 */
import type { Clock, TimerHandle } from '../core/clock.js';

/** Something that waits: failed with the timeout error, or handed back. */
export interface Waiting {
  fail(err: Error): void;
}

export class DiscoveryWait<R extends Waiting> {
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  readonly #timeoutError: () => Error;
  readonly #waiting = new Map<R, TimerHandle>();
  readonly #answerListeners = new Set<() => void>();
  #pending = true;

  /** `timeoutError` makes the error a request fails with once it waited `timeoutMs`. */
  constructor(clock: Clock, timeoutMs: number, timeoutError: () => Error) {
    this.#clock = clock;
    this.#timeoutMs = timeoutMs;
    this.#timeoutError = timeoutError;
  }

  /** True until discovery's first answer. */
  get pending(): boolean {
    return this.#pending;
  }

  /** Holds `request` until the first answer, or fails it after the timeout. */
  hold(request: R): void {
    const timer = this.#clock.setTimeout(() => {
      if (this.#waiting.delete(request)) request.fail(this.#timeoutError());
    }, this.#timeoutMs);
    this.#waiting.set(request, timer);
  }

  /** Discovery answered: the held requests, in arrival order (each held once). */
  answered(): R[] {
    if (!this.#pending) return [];
    this.#pending = false;
    for (const listener of [...this.#answerListeners]) listener();
    const held = [...this.#waiting.keys()];
    for (const timer of this.#waiting.values()) timer.cancel();
    this.#waiting.clear();
    return held;
  }

  /** Fails every held request with `err` (the cluster stops). */
  failAll(err: Error): void {
    const held = [...this.#waiting];
    this.#waiting.clear();
    for (const [request, timer] of held) {
      timer.cancel();
      request.fail(err);
    }
  }

  /** Resolves at the first answer (at once after it); rejects with the timeout error after the timeout. */
  whenAnswered(): Promise<void> {
    if (!this.#pending) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        timer.cancel();
        this.#answerListeners.delete(done);
        resolve();
      };
      const timer = this.#clock.setTimeout(() => {
        this.#answerListeners.delete(done);
        reject(this.#timeoutError());
      }, this.#timeoutMs);
      this.#answerListeners.add(done);
    });
  }
}
