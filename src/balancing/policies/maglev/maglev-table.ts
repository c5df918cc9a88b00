/**
 * The Maglev lookup table (Eisenbud et al., NSDI 2016), with Envoy's weighting. Each endpoint
 * has a preference list over the M slots — a permutation given by `offset + j·skip (mod M)`
 * with `offset` and `skip` hashed from its key, M prime — and endpoints take turns claiming
 * their next preferred free slot until every slot is owned. Each endpoint ends with M/N slots
 * ±1, and adding an endpoint reassigns little more than the slots it takes.
 *
 * Weights: an endpoint of relative weight r = w / max w claims a slot only on turns where
 * turn × r reaches its next target, i.e. every 1/r turns, so slots follow weights.
 */

export class MaglevTable {
  /** Slot → endpoint index. */
  readonly slots: Int32Array;

  /**
   * @param offsets per endpoint, in [0, size).
   * @param skips per endpoint, in [1, size).
   * @param weights per endpoint, > 0.
   * @param size M, a prime > 1.
   */
  constructor(offsets: ArrayLike<number>, skips: ArrayLike<number>, weights: ArrayLike<number>, size: number) {
    const n = offsets.length;
    const slots = new Int32Array(size);
    // Probing reads only this bitmap of claimed slots (32 KB at 262,139 slots: it stays in the
    // first-level cache), not the 4-byte owner array.
    const taken = new Uint32Array((size + 31) >>> 5);
    let maxWeight = 0;
    for (let i = 0; i < n; i++) maxWeight = Math.max(maxWeight, weights[i] as number);
    const relative = new Float64Array(n);
    const target = new Float64Array(n);
    const position = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      relative[i] = (weights[i] as number) / maxWeight;
      position[i] = offsets[i] as number;
    }
    let filled = 0;
    for (let turn = 1; filled < size; turn++) {
      for (let i = 0; i < n && filled < size; i++) {
        if (turn * (relative[i] as number) < (target[i] as number)) continue;
        target[i]! += 1;
        const skip = skips[i] as number;
        let c = position[i] as number;
        while (((taken[c >>> 5] as number) & (1 << (c & 31))) !== 0) {
          c += skip;
          if (c >= size) c -= size;
        }
        taken[c >>> 5]! |= 1 << (c & 31);
        slots[c] = i;
        c += skip;
        position[i] = c >= size ? c - size : c;
        filled++;
      }
    }
    this.slots = slots;
  }
}

/** True when `n` is prime (trial division; table sizes are at most a few million). */
export function isPrime(n: number): boolean {
  if (!Number.isInteger(n) || n < 2) return false;
  if (n % 2 === 0) return n === 2;
  for (let d = 3; d * d <= n; d += 2) if (n % d === 0) return false;
  return true;
}

/** The smallest prime >= n. */
export function nextPrime(n: number): number {
  let p = Math.max(2, Math.ceil(n));
  while (!isPrime(p)) p++;
  return p;
}
