/**
 * Builds a `Cluster`'s engine hooks (`ClusterInternals`, see `cluster-internals.ts`) from the
 * parts of the cluster they reach: its balancer, its ledger (each attempt handed out counts one
 * request there), its attempt host (picking, accounting and retries of an attempt chain) and
 * its eligibility listeners. The cluster calls `clusterHooks` once, in its constructor; the
 * hooks hold no state of their own.
 */
import type { Balancer } from '../balancing/balancer.js';
import type { PickContext } from '../balancing/picker.js';
import type { Endpoint } from '../core/endpoint.js';
import type { EvenlbError } from '../core/errors.js';
import type { EndpointSource } from '../discovery/endpoint-source.js';
import type { CloseReason } from '../pool/lifetime-policy.js';
import { type AttemptHost, attemptOn, firstAttempt } from './attempt-chain.js';
import { closedError, noEndpointError } from './cluster-errors.js';
import type { ClusterInternals } from './cluster-internals.js';
import type { ClusterLedger } from './cluster-ledger.js';
import { pickUsable } from './usable-pick.js';

/** What the hooks reach of their cluster. */
export interface ClusterHookParts {
  readonly name: string;
  readonly source: EndpointSource;
  readonly balancer: Balancer;
  readonly ledger: ClusterLedger;
  readonly attempts: AttemptHost;
  /** The cluster's shared pick context (never carries a hash). */
  readonly pick: PickContext;
  /** Where the next search for a usable endpoint starts in the picker's list (`acquireUsable`). */
  readonly usableFrom: { next: number };
  /** Called after every discovery update with the eligible keys. */
  readonly eligibleListeners: Set<(eligible: ReadonlySet<string>) => void>;
  /** The cluster refuses new work. */
  closed(): boolean;
  /** The error for a request before discovery's first answer; undefined once discovery has answered. */
  pending(): EvenlbError | undefined;
  /** Picks an endpoint without accounting a request. */
  pickForConnection(exclude?: string, hash?: number): Endpoint | EvenlbError;
}

/**
 * The engine hooks of the cluster `p` describes.
 *
 * @example
 * this.#internals = clusterHooks({ name, source, balancer, ledger, attempts, ... });
 */
export function clusterHooks(p: ClusterHookParts): ClusterInternals {
  const { balancer, ledger, attempts } = p;
  return {
    balancer,
    readsReports: balancer.policy.loadSignals?.includes('reports') ?? false,
    acquire: (exclude, hash) => {
      ledger.requests++;
      return firstAttempt(attempts, exclude, undefined, hash);
    },
    acquireUsable: (usable, hash) => {
      if (p.closed()) return closedError(p.name);
      const pending = p.pending();
      if (pending !== undefined) return pending;
      const ctx = hash === undefined ? p.pick : { hash };
      const picked = pickUsable(balancer.picker, ctx, usable, p.usableFrom);
      if (picked === undefined) return undefined;
      if ('type' in picked) return noEndpointError(p.name, p.source, picked.reason);
      ledger.requests++;
      return attemptOn(attempts, picked, undefined, hash);
    },
    track: (endpoint) => {
      ledger.requests++;
      return attemptOn(attempts, endpoint);
    },
    pickForConnection: (exclude, hash) => p.pickForConnection(exclude, hash),
    noteConnection: (key, change, reason?: CloseReason) => ledger.noteConnection(key, change, reason ?? 'peer', true),
    adoptConnection: (key) => ledger.noteConnection(key, 'opened', 'peer', false),
    onEligibleChange: (listener) => {
      p.eligibleListeners.add(listener);
      return () => p.eligibleListeners.delete(listener);
    },
  };
}
