/**
 * Shares one `ServiceWatch` among every source that follows the same Service through the
 * same API connection with the same timing: many routes to a Service cost one pair of watch
 * connections. Reference-counted: `acquireServiceWatch` starts the watch for its first user,
 * the last `release` closes it. Keys are built by the source from the connection's identity,
 * the namespace and name, and the watch timing (two sources that would behave differently
 * never share). The process-wide `defaultKubernetesWatchCache` is used unless a source is given
 * its own.
 *
 * To users a cache is an opaque handle (a scope of sharing, plus how many watches it holds):
 * the watches inside it are discovery's own machinery, reached only through
 * `acquireServiceWatch`, which the class grants access to its entries.
 */
import type { ServiceWatch } from './service-watch.js';

/** One user's hold on a shared watch. `release()` is idempotent. */
export interface ServiceWatchLease {
  readonly watch: ServiceWatch;
  release(): Promise<void>;
}

let acquire: (cache: KubernetesWatchCache, key: string, create: () => ServiceWatch) => ServiceWatchLease;

/**
 * A scope in which Kubernetes endpoint sources share their watches.
 *
 * @example
 * const cache = new KubernetesWatchCache();
 * const a = createKubernetesEndpointSource('k8s:///web.prod:80', { cache });
 * const b = createKubernetesEndpointSource('k8s:///web.prod:https', { cache });
 * cache.size; // 1: one watch of Service prod/web serves both
 */
export class KubernetesWatchCache {
  readonly #entries = new Map<string, { readonly watch: ServiceWatch; refs: number }>();

  static {
    acquire = (cache, key, create) => cache.#acquire(key, create);
  }

  /** Number of live shared watches. */
  get size(): number {
    return this.#entries.size;
  }

  #acquire(key: string, create: () => ServiceWatch): ServiceWatchLease {
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      entry = { watch: create(), refs: 0 };
      this.#entries.set(key, entry);
      entry.watch.start();
    }
    entry.refs++;
    const held = entry;
    let released = false;
    return {
      watch: held.watch,
      release: async () => {
        if (released) return;
        released = true;
        held.refs--;
        if (held.refs > 0) return;
        if (this.#entries.get(key) === held) this.#entries.delete(key);
        await held.watch.close();
      },
    };
  }
}

/**
 * The watch for `key` in `cache`, created (and started) with `create` when none is live.
 *
 * @example
 * const lease = acquireServiceWatch(cache, key, () => new ServiceWatch(options));
 * lease.watch.subscribe(() => console.log(lease.watch.state()));
 * await lease.release(); // the last release closes the watch
 */
export function acquireServiceWatch(
  cache: KubernetesWatchCache,
  key: string,
  create: () => ServiceWatch,
): ServiceWatchLease {
  return acquire(cache, key, create);
}

/** The process-wide cache sources use by default. */
export const defaultKubernetesWatchCache = new KubernetesWatchCache();
