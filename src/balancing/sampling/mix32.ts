/**
 * 32-bit integer mixing for hash policies: murmur3's finaliser (`fmix32`), a bijection with
 * full avalanche, and helpers built on it. Everything here is pure integer arithmetic, so
 * ring and table builds stay allocation-free and identical on every platform and process.
 */

/** murmur3 fmix32: a bijective avalanche of a 32-bit value. Returns an unsigned 32-bit integer. */
export function mix32(x: number): number {
  let h = x | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The golden-ratio increment (2^32 / φ), spreading consecutive integers over the 32-bit space. */
export const GOLDEN32 = 0x9e3779b9;

/** A well-mixed 32-bit value derived from `base` and a small integer `i` (vnode number, seed). */
export function mix32With(base: number, i: number): number {
  return mix32((base + Math.imul(i + 1, GOLDEN32)) | 0);
}
