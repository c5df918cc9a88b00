/**
 * Jittered exponential backoff for reconnecting to the API server. The n-th consecutive
 * failure waits `min(maxMs, baseMs * 2^(n-1))`, scaled by a random factor in [0.5, 1) so many
 * watchers that lost the API server together do not return in lockstep ("equal jitter": the
 * wait never collapses to zero). `reset()` after a success starts over at `baseMs`.
 */
import type { Random } from '../../core/random.js';

export class Backoff {
  readonly baseMs: number;
  readonly maxMs: number;
  readonly #random: Random;
  #failures = 0;

  constructor(baseMs: number, maxMs: number, random: Random) {
    this.baseMs = baseMs;
    this.maxMs = Math.max(baseMs, maxMs);
    this.#random = random;
  }

  /** Consecutive failures since the last `reset()`. */
  get failures(): number {
    return this.#failures;
  }

  /** Records a failure and returns how long to wait (ms) before the next attempt. */
  next(): number {
    this.#failures++;
    const ceiling = Math.min(this.maxMs, this.baseMs * 2 ** Math.min(this.#failures - 1, 30));
    return ceiling * (0.5 + 0.5 * this.#random.next());
  }

  reset(): void {
    this.#failures = 0;
  }
}
