/**
 * The object store behind the fake Kubernetes API server: objects by `resource/namespace/name`,
 * the global resourceVersion every change bumps, a bounded event history watches resume from
 * (older versions are compacted away), and the snapshots behind paged LISTs' continue tokens.
 */
import type { EndpointSlice, Service } from '../../src/discovery/kubernetes/kube-objects.js';
import {
  CONTINUE_EXPIRED,
  decodeContinue,
  encodeContinue,
  type FakeObject,
  type FakeResource,
  type HistoryEvent,
  listItem,
  RESOURCES,
  type StoredObject,
} from './fake-kube-resources.js';

/** One page of a LIST, or the error status to answer instead. */
export type ListPage =
  | {
      readonly metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
      readonly items: readonly unknown[];
    }
  | { readonly error: number; readonly message: string };

export class FakeKubeStore {
  readonly #objects = new Map<string, StoredObject>();
  readonly #history: HistoryEvent[] = [];
  readonly #historyLimit: number;
  readonly #onEvent: (event: HistoryEvent) => void;
  #rv = 1000;
  /** Watches may resume from any version >= this one. */
  #compactedRv = 1000;
  #uid = 0;
  /** Snapshots behind outstanding continue tokens, by id. */
  readonly #listSnapshots = new Map<number, { readonly rv: number; readonly items: readonly unknown[] }>();
  #nextSnapshotId = 1;
  /** Continue requests still to be answered 410 Expired (`expireContinueTokens(next)`). */
  #expireNextContinues = 0;

  /** `onEvent` sees every change once it is recorded (the server delivers it to open watches). */
  constructor(historyLimit: number, onEvent: (event: HistoryEvent) => void) {
    this.#historyLimit = historyLimit;
    this.#onEvent = onEvent;
  }

  /** The current (latest) resourceVersion. */
  get rv(): number {
    return this.#rv;
  }

  /** The oldest resourceVersion a watch may still resume from. */
  get compactedRv(): number {
    return this.#compactedRv;
  }

  /** The recorded events, oldest first. */
  get history(): readonly HistoryEvent[] {
    return this.#history;
  }

  /** The stored object (not a copy) under `resource/namespace/name`; namespace '' when cluster-scoped. */
  get(key: string): StoredObject | undefined {
    return this.#objects.get(key);
  }

  /** Every stored object (not copies) by key, in insertion order. */
  entries(): IterableIterator<[string, StoredObject]> {
    return this.#objects.entries();
  }

  /** Creates or replaces an object; returns a copy of what was stored (with resourceVersion and uid). */
  apply(resource: FakeResource, input: EndpointSlice | Service | FakeObject): StoredObject {
    const name = input.metadata.name;
    if (name === undefined || name === '') throw new Error(`${RESOURCES[resource].kind} needs metadata.name`);
    const namespace = RESOURCES[resource].clusterScoped ? '' : (input.metadata.namespace ?? 'default');
    const key = `${resource}/${namespace}/${name}`;
    const previous = this.#objects.get(key);
    const rv = ++this.#rv;
    const object = structuredClone(input) as StoredObject;
    object.metadata = {
      ...object.metadata,
      name,
      ...(namespace === '' ? {} : { namespace }),
      uid: previous?.metadata.uid ?? object.metadata.uid ?? `uid-${resource}-${++this.#uid}`,
      resourceVersion: String(rv),
    };
    this.#objects.set(key, object);
    this.#record({ rv, resource, type: previous === undefined ? 'ADDED' : 'MODIFIED', object, previous });
    return structuredClone(object);
  }

  /** Deletes an object; false when it did not exist. */
  delete(resource: FakeResource, namespace: string, name: string): boolean {
    const key = `${resource}/${namespace}/${name}`;
    const previous = this.#objects.get(key);
    if (previous === undefined) return false;
    this.#objects.delete(key);
    const rv = ++this.#rv;
    const object = structuredClone(previous);
    object.metadata.resourceVersion = String(rv);
    this.#record({ rv, resource, type: 'DELETED', object, previous });
    return true;
  }

  /** Forgets the event history and every continue token's snapshot. */
  compact(): void {
    this.#history.length = 0;
    this.#compactedRv = this.#rv;
    this.#listSnapshots.clear();
  }

  /** Drops every outstanding continue token and expires the `next` continue requests; returns how many were dropped. */
  expireContinueTokens(next: number): number {
    const n = this.#listSnapshots.size;
    this.#listSnapshots.clear();
    this.#expireNextContinues += next;
    return n;
  }

  /**
   * A LIST page of `resource` objects that `matches` accepts: `limit` items at most (0: all)
   * from the snapshot behind `token`, or from a new one in a stable (namespace/name) order.
   */
  list(
    resource: FakeResource,
    matches: (object: StoredObject) => boolean,
    limit: number,
    token: string | undefined,
  ): ListPage {
    let rv = this.#rv;
    let items: readonly unknown[];
    let offset = 0;
    if (token !== undefined && token !== '') {
      const decoded = decodeContinue(token);
      if (decoded === undefined) return { error: 400, message: 'continue key is not valid: malformed token' };
      const snapshot = this.#listSnapshots.get(decoded.id);
      if (this.#expireNextContinues > 0 || snapshot === undefined || snapshot.rv < this.#compactedRv) {
        if (this.#expireNextContinues > 0) this.#expireNextContinues--;
        this.#listSnapshots.delete(decoded.id);
        return { error: 410, message: CONTINUE_EXPIRED };
      }
      this.#listSnapshots.delete(decoded.id);
      rv = snapshot.rv;
      items = snapshot.items;
      offset = decoded.offset;
    } else {
      // Stable order, as etcd's key order: namespace, then name.
      items = [...this.#objects.entries()]
        .filter(([key, o]) => key.startsWith(`${resource}/`) && matches(o))
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([, o]) => listItem(structuredClone(o)));
    }
    const end = limit === 0 ? items.length : Math.min(items.length, offset + limit);
    const metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number } = {
      resourceVersion: String(rv),
    };
    if (end < items.length) {
      const id = this.#nextSnapshotId++;
      this.#listSnapshots.set(id, { rv, items });
      metadata.continue = encodeContinue({ id, offset: end });
      metadata.remainingItemCount = items.length - end;
    }
    return { metadata, items: items.slice(offset, end) };
  }

  #record(event: HistoryEvent): void {
    this.#history.push(event);
    while (this.#history.length > this.#historyLimit) {
      const dropped = this.#history.shift()!;
      this.#compactedRv = dropped.rv;
    }
    this.#onEvent(event);
  }
}
