/**
 * The close/destroy contract every evenlb object that owns sockets or timers keeps (undici's):
 *
 * - `close()` stops new work, lets in-flight work finish and resolves once everything is shut;
 * - `destroy(err)` fails in-flight work and resolves as soon as that is done — and it also
 *   settles a `close()` still waiting (a stuck graceful shutdown can always be escalated);
 * - both are idempotent: a second call returns the first call's promise; `close()` after
 *   `destroy()` returns the destroy promise.
 *
 * `Shutdown` holds that state so each owner writes only its graceful and its abrupt step. Both
 * promises always resolve (a step that throws counts as done): shutdown must never reject.
 *
 * @example
 * readonly #shutdown = new Shutdown();
 * close() { return this.#shutdown.close(() => this.#drainAndClose()); }
 * destroy(err?: Error) { return this.#shutdown.destroy(() => this.#failEverything(err)); }
 * dispatch() { if (this.#shutdown.closed) fail(EVENLB_CLOSED) ... }
 */

export class Shutdown {
  #close: Promise<void> | undefined;
  #settleClose: (() => void) | undefined;
  #destroy: Promise<void> | undefined;

  /** True once `close()` or `destroy()` was called: new work must be refused. */
  get closed(): boolean {
    return this.#close !== undefined || this.#destroy !== undefined;
  }

  /** True once `destroy()` was called. */
  get destroyed(): boolean {
    return this.#destroy !== undefined;
  }

  /** Runs `graceful` once; the promise settles when it does, or when a `destroy()` finishes first. */
  close(graceful: () => Promise<unknown>): Promise<void> {
    if (this.#destroy !== undefined) return this.#destroy;
    if (this.#close === undefined) {
      this.#close = new Promise<void>((resolve) => {
        this.#settleClose = resolve;
      });
      const settle = this.#settleClose as () => void;
      run(graceful).then(settle);
    }
    return this.#close;
  }

  /** Runs `abrupt` once; its settling also settles a pending `close()`. */
  destroy(abrupt: () => Promise<unknown>): Promise<void> {
    if (this.#destroy === undefined) {
      this.#destroy = run(abrupt);
      const settle = this.#settleClose;
      if (settle !== undefined) this.#destroy.then(settle);
    }
    return this.#destroy;
  }
}

/** Runs a shutdown step; a synchronous throw or a rejection counts as done. */
function run(step: () => Promise<unknown>): Promise<void> {
  try {
    return step().then(
      () => undefined,
      () => undefined,
    );
  } catch {
    return Promise.resolve();
  }
}
