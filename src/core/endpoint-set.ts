/**
 * An immutable snapshot of a Service's endpoints. Discovery publishes a new set on every
 * change; consumers diff consecutive sets to reconcile pools and load records. `eligible()`
 * applies kube-proxy's rule: the ready endpoints; when none is ready, the ones that are
 * `serving && terminating` (so a Service mid-shutdown still answers).
 */
import { createEndpoint, type Endpoint, type EndpointInput, endpointChanged } from './endpoint.js';

export interface EndpointSetDiff {
  readonly added: readonly Endpoint[];
  readonly removed: readonly Endpoint[];
  /** Same key, different conditions, weight or metadata: `[previous, next]`. */
  readonly changed: readonly (readonly [Endpoint, Endpoint])[];
}

/**
 * A Service's `spec.trafficDistribution` (Kubernetes 1.31+): `PreferClose` and its newer name
 * `PreferSameZone` ask for same-zone endpoints first; `PreferSameNode` for same-node ones
 * (treated as same-zone here). Any other value is kept as given and means no preference.
 */
export type TrafficDistribution = 'PreferClose' | 'PreferSameZone' | 'PreferSameNode' | (string & {});

/** Service-level facts that travel with a snapshot. */
export interface EndpointSetMeta {
  readonly trafficDistribution?: TrafficDistribution;
  /** The caller's own zone, when discovery learnt it (the Kubernetes source reads its node's label). */
  readonly callerZone?: string;
}

export class EndpointSet {
  static readonly EMPTY = new EndpointSet([]);

  readonly endpoints: readonly Endpoint[];
  /** The Service's `trafficDistribution`, when discovery knows it (Kubernetes sources). */
  readonly trafficDistribution: TrafficDistribution | undefined;
  /** The caller's zone as discovery learnt it; zone routing uses it unless configured otherwise. */
  readonly callerZone: string | undefined;
  readonly #byKey: ReadonlyMap<string, Endpoint>;
  #eligible: readonly Endpoint[] | undefined;

  /** Builds a set; a later duplicate key replaces an earlier one. Order is kept (first occurrence). */
  constructor(endpoints: Iterable<Endpoint>, meta: EndpointSetMeta = {}) {
    this.trafficDistribution = meta.trafficDistribution;
    this.callerZone = meta.callerZone;
    const byKey = new Map<string, Endpoint>();
    for (const e of endpoints) byKey.set(e.key, e);
    this.#byKey = byKey;
    this.endpoints = Object.freeze([...byKey.values()]);
  }

  /** Builds a set from plain inputs, applying Kubernetes' condition defaults. */
  static from(inputs: Iterable<EndpointInput | Endpoint>, meta: EndpointSetMeta = {}): EndpointSet {
    const list: Endpoint[] = [];
    for (const i of inputs) list.push(createEndpoint(i));
    return new EndpointSet(list, meta);
  }

  get size(): number {
    return this.endpoints.length;
  }

  get(key: string): Endpoint | undefined {
    return this.#byKey.get(key);
  }

  has(key: string): boolean {
    return this.#byKey.has(key);
  }

  /**
   * The endpoints that may receive new requests: ready ones; if none is ready, the
   * serving-and-terminating ones. Computed once per snapshot.
   */
  eligible(): readonly Endpoint[] {
    if (this.#eligible === undefined) {
      const ready = this.endpoints.filter((e) => e.conditions.ready);
      this.#eligible = Object.freeze(
        ready.length > 0 ? ready : this.endpoints.filter((e) => e.conditions.serving && e.conditions.terminating),
      );
    }
    return this.#eligible;
  }

  /** True when both sets hold the same endpoints with the same attributes (order ignored). */
  equals(other: EndpointSet): boolean {
    if (this.trafficDistribution !== other.trafficDistribution || this.callerZone !== other.callerZone) return false;
    const d = EndpointSet.diff(this, other);
    return d.added.length === 0 && d.removed.length === 0 && d.changed.length === 0;
  }

  /** What changed from `prev` to `next`, by endpoint key. */
  static diff(prev: EndpointSet, next: EndpointSet): EndpointSetDiff {
    const added: Endpoint[] = [];
    const removed: Endpoint[] = [];
    const changed: (readonly [Endpoint, Endpoint])[] = [];
    for (const e of next.endpoints) {
      const before = prev.get(e.key);
      if (before === undefined) added.push(e);
      else if (endpointChanged(before, e)) changed.push([before, e]);
    }
    for (const e of prev.endpoints) if (!next.has(e.key)) removed.push(e);
    return { added, removed, changed };
  }
}
