/**
 * Weighted random choice in O(1) per draw: Vose's alias method. Building the table is O(n);
 * each draw picks a column and tosses a biased coin between the column and its alias. Used by the `random` policy and by the weighted candidate draws of
 * `least-request` and `peak-ewma`.
 */
import type { Random } from '../../core/random.js';

/** Coin resolution: 2^24 steps. */
const COIN = 16_777_216;

export class AliasTable {
  readonly size: number;
  readonly #prob: Float64Array;
  readonly #alias: Int32Array;

  /**
   * @param weights positive finite weights, one per index (at least one).
   * @example
   * const t = new AliasTable([1, 3]);
   * t.sample(random) // 1 about three times as often as 0
   */
  constructor(weights: ArrayLike<number>) {
    const n = weights.length;
    if (n === 0) throw new RangeError('AliasTable needs at least one weight');
    this.size = n;
    const prob = new Float64Array(n);
    const alias = new Int32Array(n);
    let total = 0;
    for (let i = 0; i < n; i++) total += weights[i] as number;
    const scaled = new Float64Array(n);
    const small = new Int32Array(n);
    const large = new Int32Array(n);
    let ns = 0;
    let nl = 0;
    for (let i = 0; i < n; i++) {
      const s = ((weights[i] as number) * n) / total;
      scaled[i] = s;
      if (s < 1) small[ns++] = i;
      else large[nl++] = i;
    }
    while (ns > 0 && nl > 0) {
      const s = small[--ns] as number;
      const l = large[nl - 1] as number;
      prob[s] = scaled[s] as number;
      alias[s] = l;
      const rest = (scaled[l] as number) + (scaled[s] as number) - 1;
      scaled[l] = rest;
      if (rest < 1) {
        nl--;
        small[ns++] = l;
      }
    }
    // Whatever is left is 1 up to rounding error.
    while (nl > 0) {
      const l = large[--nl] as number;
      prob[l] = 1;
      alias[l] = l;
    }
    while (ns > 0) {
      const s = small[--ns] as number;
      prob[s] = 1;
      alias[s] = s;
    }
    this.#prob = prob;
    this.#alias = alias;
  }

  /**
   * An index in [0, size), with probability proportional to its weight. Two integer draws (a
   * column and a 24-bit coin): integers stay unboxed across calls, floats may not.
   */
  sample(random: Random): number {
    const i = random.int(this.size);
    return random.int(COIN) < (this.#prob[i] as number) * COIN ? i : (this.#alias[i] as number);
  }
}
