/**
 * The one `DispatchController` the caller of a cluster sees for a request, whatever attempt
 * carries it (undici's own `RetryHandler` keeps one the same way). Each attempt runs on a
 * connection with a controller of its own; this one forwards `pause`, `resume` and `abort` to
 * the current attempt's, keeps a pause across attempts, and an abort that comes between
 * attempts aborts the next attempt as soon as it starts. Before any attempt has started (a
 * request failed while waiting for discovery, or refused at once) it is a controller that
 * nothing can pause.
 */
import type { Dispatcher } from 'undici';

export class RequestController implements Dispatcher.DispatchController {
  #target: Dispatcher.DispatchController | undefined = undefined;
  #paused = false;
  #aborted = false;
  #reason: Error | null = null;

  /** The controller of the attempt that now carries the request (undici's, for its connection). */
  attach(target: Dispatcher.DispatchController): void {
    this.#target = target;
    if (this.#aborted) target.abort(this.#reason as Error);
    else if (this.#paused) target.pause();
  }

  get aborted(): boolean {
    return this.#aborted || (this.#target?.aborted ?? false);
  }

  get paused(): boolean {
    return this.#paused;
  }

  get reason(): Error | null {
    return this.#reason ?? this.#target?.reason ?? null;
  }

  get rawHeaders(): Dispatcher.DispatchController['rawHeaders'] {
    return this.#target?.rawHeaders ?? null;
  }

  get rawTrailers(): Dispatcher.DispatchController['rawTrailers'] {
    return this.#target?.rawTrailers ?? null;
  }

  pause(): void {
    this.#paused = true;
    this.#target?.pause();
  }

  resume(): void {
    this.#paused = false;
    this.#target?.resume();
  }

  abort(reason: Error): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#target?.abort(reason);
  }
}
