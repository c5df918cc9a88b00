/**
 * The discovery contract. An `EndpointSource` follows one target and publishes snapshots:
 * the endpoint set plus a status that tells "resolved", "still pending", "the Service does not
 * exist" and "discovery is failing, this is the last known set" apart (Linkerd's distinction
 * between a missing service and zero endpoints). Discovery trouble never empties a set: on a
 * transient failure the last known endpoints are kept and the status turns `degraded`.
 */
import { EndpointSet } from '../core/endpoint-set.js';
import type { EvenlbError } from '../core/errors.js';

export type DiscoveryStatus =
  /** No answer yet. */
  | { readonly state: 'pending' }
  /** The set is current. It may be empty: the Service exists with zero endpoints. */
  | { readonly state: 'ok' }
  /** The Service (or file, or DNS name) does not exist; the set is empty. */
  | { readonly state: 'not-found'; readonly error: EvenlbError }
  /** Discovery is failing; the set is the last known one. */
  | { readonly state: 'degraded'; readonly error: EvenlbError };

export interface DiscoverySnapshot {
  readonly endpoints: EndpointSet;
  readonly status: DiscoveryStatus;
}

export interface EndpointSource {
  /** What is followed, for logs and stats (usually the target URI). */
  readonly target: string;
  /** The latest snapshot. */
  snapshot(): DiscoverySnapshot;
  /** Calls `listener` with every later snapshot; returns an unsubscribe function. */
  subscribe(listener: (snapshot: DiscoverySnapshot) => void): () => void;
  /** Resolves once the status is no longer `pending` (or the source is closed). */
  ready(): Promise<void>;
  /** Stops following; idempotent. */
  close(): Promise<void>;
}

const PENDING: DiscoveryStatus = Object.freeze({ state: 'pending' });
const OK: DiscoveryStatus = Object.freeze({ state: 'ok' });

/**
 * Shared publishing logic for sources: de-duplicates identical snapshots, keeps the last known
 * set on failure, resolves `ready()` on the first answer.
 */
export abstract class BaseEndpointSource implements EndpointSource {
  readonly target: string;
  #snapshot: DiscoverySnapshot = Object.freeze({ endpoints: EndpointSet.EMPTY, status: PENDING });
  readonly #listeners = new Set<(snapshot: DiscoverySnapshot) => void>();
  #closed = false;
  #resolveReady!: () => void;
  readonly #ready = new Promise<void>((resolve) => {
    this.#resolveReady = resolve;
  });

  constructor(target: string) {
    this.target = target;
  }

  snapshot(): DiscoverySnapshot {
    return this.#snapshot;
  }

  subscribe(listener: (snapshot: DiscoverySnapshot) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  ready(): Promise<void> {
    return this.#ready;
  }

  get closed(): boolean {
    return this.#closed;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#resolveReady();
    this.#listeners.clear();
    await this.onClose();
  }

  /** Releases the source's resources (timers, watches); called once by `close()`. */
  protected abstract onClose(): Promise<void> | void;

  /** Publishes a current endpoint set. */
  protected publishEndpoints(endpoints: EndpointSet): void {
    const prev = this.#snapshot;
    if (prev.status.state === 'ok' && prev.endpoints.equals(endpoints)) return;
    this.#emit({ endpoints, status: OK });
  }

  /**
   * Publishes a transient failure; the last known set is kept. A source whose discovery is
   * partly failing may pass `endpoints` it still knows to be current (never an empty stand-in).
   */
  protected publishFailure(error: EvenlbError, endpoints?: EndpointSet): void {
    const prev = this.#snapshot;
    this.#emit({ endpoints: endpoints ?? prev.endpoints, status: { state: 'degraded', error } });
  }

  /** Publishes "does not exist"; the set becomes empty. */
  protected publishNotFound(error: EvenlbError): void {
    this.#emit({ endpoints: EndpointSet.EMPTY, status: { state: 'not-found', error } });
  }

  #emit(snapshot: DiscoverySnapshot): void {
    if (this.#closed) return;
    this.#snapshot = Object.freeze(snapshot);
    this.#resolveReady();
    for (const listener of [...this.#listeners]) listener(this.#snapshot);
  }
}
