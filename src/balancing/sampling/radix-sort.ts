/**
 * A stable LSD radix sort of 32-bit keys carrying a payload, for hash rings: O(n), no
 * comparisons — a million ring points sort in milliseconds where a comparison sort takes a
 * hundred. Small inputs use three passes of 11 bits (small count tables), large ones two
 * passes of 16 bits.
 */

/**
 * Sorts `keys` ascending (as unsigned 32-bit values), moving `values` along; stable. Returns
 * the sorted pair (possibly the scratch arrays, not the inputs).
 */
export function radixSortPairs(keys: Uint32Array, values: Int32Array): { keys: Uint32Array; values: Int32Array } {
  const n = keys.length;
  let srcK: Uint32Array = keys;
  let srcV: Int32Array = values;
  let dstK: Uint32Array = new Uint32Array(n);
  let dstV: Int32Array = new Int32Array(n);
  const bits = n > 1 << 17 ? 16 : 11;
  const RADIX = 1 << bits;
  const MASK = RADIX - 1;
  const counts = new Uint32Array(RADIX);
  for (let shift = 0; shift < 32; shift += bits) {
    counts.fill(0);
    for (let i = 0; i < n; i++) counts[((srcK[i] as number) >>> shift) & MASK]!++;
    let sum = 0;
    for (let b = 0; b < RADIX; b++) {
      const c = counts[b] as number;
      counts[b] = sum;
      sum += c;
    }
    for (let i = 0; i < n; i++) {
      const k = srcK[i] as number;
      const at = counts[(k >>> shift) & MASK]!++;
      dstK[at] = k;
      dstV[at] = srcV[i] as number;
    }
    [srcK, dstK] = [dstK, srcK];
    [srcV, dstV] = [dstV, srcV];
  }
  return { keys: srcK, values: srcV };
}
