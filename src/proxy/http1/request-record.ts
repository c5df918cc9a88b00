/**
 * What the access log and the answered-requests metric need of the request a data-path
 * connection is serving: its method and path, when it began (the clock is read only while the
 * access log is on), and, once it is answered, the status and the reason.
 */
import type { Http1Context } from './http1-context.js';

export class RequestRecord {
  readonly #ctx: Http1Context<unknown>;
  readonly #client: string;
  method = '';
  path = '';
  #startMs = 0;

  /** `client`: the client's address, for the log. */
  constructor(ctx: Http1Context<unknown>, client: string) {
    this.#ctx = ctx;
    this.#client = client;
  }

  /** A new request head was read. */
  begin(method: string, target: string): void {
    this.method = method;
    this.path = target;
  }

  /** The request is forwarded, to `path` upstream. */
  forwarded(path: string): void {
    this.path = path;
    this.#startMs = this.#ctx.state().accessLog ? this.#ctx.clock.now() : 0;
  }

  /** Counts the answer (status 0: cut) and logs it when the access log is on. */
  answered(status: number, reason: string | undefined, cluster: string): void {
    const ctx = this.#ctx;
    ctx.metrics.observeDownstream(ctx.listener, status);
    if (!ctx.state().accessLog) return;
    ctx.access({
      client: this.#client,
      method: this.method,
      path: this.path,
      status,
      reason,
      startMs: this.#startMs,
      cluster,
    });
  }

  /** The connection is done (closed or handed off); a subclass ends what it counted. */
  close(): void {}
}
