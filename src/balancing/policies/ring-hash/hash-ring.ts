/**
 * A consistent-hash ring (Ketama's construction): each endpoint owns a number of points
 * ("virtual nodes") at hashes derived from its key, and a request key belongs to the first
 * point at or after its hash, wrapping around. Adding an endpoint takes over only the keys
 * landing just before its own points — about 1/(N+1) of them.
 *
 * Points are `mix32(hashKey(endpoint key) + j·φ)` for j = 0, 1, …: pure integer hashing, so
 * every process builds the same ring and a build costs no allocation per point. Lookup is a
 * direct index on the top bits of the hash followed by a short binary search.
 */

import { mix32With } from '../../sampling/mix32.js';

export class HashRing {
  /** Ring point hashes, ascending. */
  readonly hashes: Uint32Array;
  /** Owner (endpoint index) of each point. */
  readonly owners: Int32Array;
  readonly #shift: number;
  /** `start[b]` = first point whose top bits are >= b; `start[2^bits]` = size. */
  readonly #start: Uint32Array;

  /**
   * @param baseHashes one 32-bit hash per endpoint (of its key).
   * @param counts points per endpoint (>= 1 each).
   */
  constructor(baseHashes: ArrayLike<number>, counts: ArrayLike<number>) {
    let total = 0;
    for (let i = 0; i < counts.length; i++) total += counts[i] as number;
    // Bucket sort on the top bits: points are uniform, so buckets hold a handful each. One
    // counting pass gives the lookup table, one scatter places the points, and a short
    // insertion sort orders each bucket: faster than a two-pass radix sort of the points.
    const bits = Math.min(16, Math.max(1, Math.ceil(Math.log2(total))));
    const shift = 32 - bits;
    const buckets = 1 << bits;
    const start = new Uint32Array(buckets + 1);
    for (let i = 0; i < counts.length; i++) {
      const base = baseHashes[i] as number;
      const c = counts[i] as number;
      for (let j = 0; j < c; j++) start[(mix32With(base, j) >>> shift) + 1]!++;
    }
    for (let b = 0; b < buckets; b++) start[b + 1]! += start[b] as number;
    const hashes = new Uint32Array(total);
    const owners = new Int32Array(total);
    const cursor = start.slice(0, buckets);
    for (let i = 0; i < counts.length; i++) {
      const base = baseHashes[i] as number;
      const c = counts[i] as number;
      for (let j = 0; j < c; j++) {
        const h = mix32With(base, j);
        const at = cursor[h >>> shift]!++;
        hashes[at] = h;
        owners[at] = i;
      }
    }
    for (let b = 0; b < buckets; b++) {
      const lo = start[b] as number;
      const hi = start[b + 1] as number;
      for (let k = lo + 1; k < hi; k++) {
        const h = hashes[k] as number;
        const o = owners[k] as number;
        let m = k - 1;
        // Stable: equal hashes keep endpoint order.
        while (m >= lo && (hashes[m] as number) > h) {
          hashes[m + 1] = hashes[m] as number;
          owners[m + 1] = owners[m] as number;
          m--;
        }
        hashes[m + 1] = h;
        owners[m + 1] = o;
      }
    }
    this.hashes = hashes;
    this.owners = owners;
    this.#shift = shift;
    this.#start = start;
  }

  get size(): number {
    return this.hashes.length;
  }

  /** The index of the first ring point at or after `hash` (wrapping to 0). */
  locate(hash: number): number {
    const hashes = this.hashes;
    const bucket = hash >>> this.#shift;
    let lo = this.#start[bucket] as number;
    let hi = this.#start[bucket + 1] as number;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((hashes[mid] as number) < hash) lo = mid + 1;
      else hi = mid;
    }
    return lo === hashes.length ? 0 : lo;
  }
}
