/**
 * Endpoint sources shared by every gRPC channel of one registration: channels to the same target
 * URI share one `EndpointSource` (one file watch, one DNS refresh loop; `k8s:///` sources share
 * their Service watch through the Kubernetes watch cache as well). A source is created on its
 * first lease and closed when its last lease is released.
 */
import type { Clock } from '../core/clock.js';
import { createEndpointSource } from '../discovery/create-endpoint-source.js';
import type { EndpointSource } from '../discovery/endpoint-source.js';
// Registers the k8s:/// scheme with createEndpointSource; @kubernetes/client-node loads lazily.
import '../discovery/kubernetes/index.js';

/** One user's hold on a shared source; `release()` is idempotent. */
export interface SourceLease {
  readonly source: EndpointSource;
  release(): void;
}

interface Shared {
  readonly source: EndpointSource;
  refs: number;
}

export class SharedSources {
  readonly #clock: Clock;
  readonly #sourceOptions: Record<string, unknown>;
  readonly #byTarget = new Map<string, Shared>();
  readonly #closing = new Set<Promise<void>>();

  constructor(clock: Clock, sourceOptions: Record<string, unknown> = {}) {
    this.#clock = clock;
    this.#sourceOptions = sourceOptions;
  }

  /** Leases the source of `target` (a valid evenlb target URI), creating it on first use. */
  acquire(target: string): SourceLease {
    let shared = this.#byTarget.get(target);
    if (shared === undefined) {
      shared = { source: createEndpointSource(target, { clock: this.#clock, ...this.#sourceOptions }), refs: 0 };
      this.#byTarget.set(target, shared);
    }
    shared.refs++;
    const held = shared;
    let released = false;
    return {
      source: held.source,
      release: () => {
        if (released) return;
        released = true;
        held.refs--;
        if (held.refs > 0 || this.#byTarget.get(target) !== held) return;
        this.#byTarget.delete(target);
        this.#track(held.source.close());
      },
    };
  }

  /** Targets with a live source. */
  targets(): string[] {
    return [...this.#byTarget.keys()];
  }

  /** Closes every source, leased or not, and waits for sources already closing. Idempotent. */
  async close(): Promise<void> {
    for (const shared of this.#byTarget.values()) this.#track(shared.source.close());
    this.#byTarget.clear();
    await Promise.all([...this.#closing]);
  }

  #track(closing: Promise<void>): void {
    const p = closing.catch(() => {}).finally(() => this.#closing.delete(p));
    this.#closing.add(p);
  }
}
