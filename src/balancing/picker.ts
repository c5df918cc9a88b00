/**
 * The picker contract. A `Balancer` publishes an immutable `Picker` for each endpoint snapshot;
 * `pick()` is synchronous, does no I/O and allocates nothing: results are preallocated, one
 * per endpoint, plus one constant per "none" reason.
 */
import type { Endpoint } from '../core/endpoint.js';
import type { EndpointLoad } from './endpoint-load.js';
import { mix32 } from './sampling/mix32.js';

/**
 * What a request tells the picker. Reuse one object per caller to keep picks allocation-free
 * (writing a new 32-bit `hash` into it may box a number in V8 — the caller's cost; pickers
 * themselves allocate nothing).
 */
export interface PickContext {
  /**
   * A 32-bit hash of the request's affinity key (hash policies). See `hashKey()`. Hash
   * policies without one pick with a random key, which spreads like `random`.
   */
  hash?: number;
  /** An endpoint key not to return if any other is eligible (retry on another endpoint). */
  exclude?: string;
}

/** An eligible endpoint with its load record and its preallocated pick result. */
export interface TrackedEndpoint {
  readonly endpoint: Endpoint;
  /**
   * The weight the policy uses: the endpoint's own weight, shaped by the `Balancer` (slow
   * start, herding guard, zone preference) for policies that follow weights.
   */
  readonly weight: number;
  readonly load: EndpointLoad;
  readonly result: Picked;
}

export interface Picked {
  readonly type: 'picked';
  readonly endpoint: Endpoint;
  readonly load: EndpointLoad;
}

/** Why nothing could be picked. */
export type NoneReason =
  /** Discovery knows no endpoint at all. */
  | 'no-endpoints'
  /** Endpoints exist but none is ready or serving-and-terminating. */
  | 'none-ready'
  /** Every eligible endpoint is ejected by outlier detection. */
  | 'all-ejected';

export interface NonePicked {
  readonly type: 'none';
  readonly reason: NoneReason;
}

export type PickResult = Picked | NonePicked;

export const NONE: Readonly<Record<NoneReason, NonePicked>> = Object.freeze({
  'no-endpoints': Object.freeze({ type: 'none', reason: 'no-endpoints' }),
  'none-ready': Object.freeze({ type: 'none', reason: 'none-ready' }),
  'all-ejected': Object.freeze({ type: 'none', reason: 'all-ejected' }),
});

export interface Picker {
  /** Endpoints this picker chooses from, in the order the policy was given them. */
  readonly endpoints: readonly TrackedEndpoint[];
  pick(context?: PickContext): PickResult;
}

/** The pick function a policy builds for one non-empty list of endpoints. */
export type PickFn = (context: PickContext | undefined) => Picked;

/**
 * 32-bit FNV-1a of a string, for hash policies' request keys (a header value, a client
 * address). Stable across processes.
 */
export function hashKey(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  // Final avalanche (murmur3 fmix32): FNV alone clusters on short, similar keys.
  return mix32(h);
}
