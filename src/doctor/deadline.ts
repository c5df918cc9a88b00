/**
 * A request deadline on the injected `Clock` (not `AbortSignal.timeout`, which reads real time):
 * `signal` aborts after `timeoutMs`; `dispose()` cancels the timer once the request is done.
 */
import type { Clock } from '../core/clock.js';

export interface Deadline {
  readonly signal: AbortSignal;
  dispose(): void;
}

/** Starts a deadline of `timeoutMs` on `clock`. */
export function deadline(clock: Clock, timeoutMs: number): Deadline {
  const controller = new AbortController();
  const timer = clock.setTimeout(() => controller.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  return { signal: controller.signal, dispose: () => timer.cancel() };
}
