/**
 * A `Dispatcher` view of a `Cluster`, so undici's `request`, `fetch`, `stream` and `compose()`
 * can send through a cluster directly (without a `BalancedAgent`).
 */
import { Dispatcher } from 'undici';

/** What the facade needs of a cluster. */
export interface DispatchTarget {
  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean;
  close(): Promise<void>;
  destroy(err?: Error): Promise<void>;
}

/** A `Dispatcher` facade over a cluster, for undici's `request`, `fetch`, `stream`... */
export class ClusterDispatcher extends Dispatcher {
  readonly #cluster: DispatchTarget;
  constructor(cluster: DispatchTarget) {
    super();
    this.#cluster = cluster;
  }
  override dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    return this.#cluster.dispatch(opts, handler);
  }
  override close(): Promise<void>;
  override close(callback: () => void): void;
  override close(callback?: () => void): Promise<void> | void {
    const p = this.#cluster.close();
    if (callback === undefined) return p;
    p.then(callback, callback);
  }
  override destroy(): Promise<void>;
  override destroy(err: Error | null): Promise<void>;
  override destroy(callback: () => void): void;
  override destroy(err: Error | null, callback: () => void): void;
  override destroy(a?: Error | null | (() => void), b?: () => void): Promise<void> | void {
    const err = typeof a === 'function' ? undefined : (a ?? undefined);
    const callback = typeof a === 'function' ? a : b;
    const p = this.#cluster.destroy(err);
    if (callback === undefined) return p;
    p.then(callback, callback);
  }
}
