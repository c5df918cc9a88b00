/**
 * Distinct random candidates for "power of d choices" pickers, in O(d) per pick and without
 * allocation. Unweighted: a partial Fisher–Yates shuffle over a permutation kept between
 * picks — swapping the drawn index into the first slots leaves a permutation behind, so
 * there is nothing to reset, and the k-th draw is uniform over the indices not yet drawn.
 * Weighted: alias-table draws, rejecting repeats with a per-pick stamp (bounded retries,
 * then the next undrawn index), so candidates arrive with probability proportional to weight.
 */
import type { Random } from '../../core/random.js';
import { AliasTable } from './alias-table.js';

/** Retries of a weighted draw that hit an index already drawn in this pick. */
const WEIGHTED_RETRIES = 4;

export class CandidateDraw {
  readonly size: number;
  readonly #random: Random;
  readonly #perm: Int32Array;
  readonly #alias: AliasTable | undefined;
  readonly #stamps: Uint32Array | undefined;
  #stamp = 0;
  #k = 0;

  /** `weights` undefined (or all equal) draws uniformly. */
  constructor(size: number, random: Random, weights?: ArrayLike<number>) {
    this.size = size;
    this.#random = random;
    const weighted = weights !== undefined && !allEqual(weights);
    this.#perm = new Int32Array(weighted ? 0 : size);
    for (let i = 0; i < this.#perm.length; i++) this.#perm[i] = i;
    this.#alias = weighted ? new AliasTable(weights) : undefined;
    this.#stamps = weighted ? new Uint32Array(size) : undefined;
  }

  /** Starts a new pick: the following `next()` calls return distinct indices. */
  begin(): void {
    this.#k = 0;
    if (this.#stamps !== undefined) {
      this.#stamp = (this.#stamp + 1) >>> 0;
      if (this.#stamp === 0) {
        this.#stamps.fill(0);
        this.#stamp = 1;
      }
    }
  }

  /** The next candidate of this pick; at most `size` calls per `begin()`. */
  next(): number {
    const stamps = this.#stamps;
    if (stamps === undefined) {
      const perm = this.#perm;
      const k = this.#k++;
      const j = k + this.#random.int(this.size - k);
      const picked = perm[j] as number;
      perm[j] = perm[k] as number;
      perm[k] = picked;
      return picked;
    }
    const alias = this.#alias as AliasTable;
    let i = alias.sample(this.#random);
    for (let r = 0; r < WEIGHTED_RETRIES && stamps[i] === this.#stamp; r++) i = alias.sample(this.#random);
    while (stamps[i] === this.#stamp) i = i + 1 === this.size ? 0 : i + 1;
    stamps[i] = this.#stamp;
    return i;
  }
}

function allEqual(values: ArrayLike<number>): boolean {
  for (let i = 1; i < values.length; i++) if (values[i] !== values[0]) return false;
  return true;
}
