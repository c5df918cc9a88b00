/**
 * Randomness, injected. `Random` is the only way evenlb code draws random numbers; a seeded
 * generator makes every pick sequence and simulation reproducible. `createRandom()` without a
 * seed is the one place that touches `Math.random` (to choose a seed).
 */

/** A source of uniform random numbers. */
export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [0, n) for n >= 1. */
  int(n: number): number;
}

/**
 * A seeded sfc32 generator (small, fast, passes PractRand to large sizes). Same seed, same
 * sequence, on every platform.
 */
export class SeededRandom implements Random {
  /**
   * The four sfc32 state words, then the latest output word, as int32. A typed array, not
   * number fields or return values: words above 2^30 are not small integers, and storing one
   * in a field or returning it from a call that is not inlined boxes a heap number — pickers
   * draw on every request and must not allocate. `int()` returns a small integer and `next()`
   * a float, computed from the output slot.
   */
  readonly #s = new Int32Array(5);
  readonly seed: number;

  constructor(seed: number) {
    this.seed = seed >>> 0;
    // splitmix32 expands the 32-bit seed into the four state words.
    let s = this.seed;
    const mix = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    for (let i = 0; i < 4; i++) this.#s[i] = mix();
    for (let i = 0; i < 12; i++) this.#advance();
  }

  /** One sfc32 step; the output word lands in slot 4. */
  #advance(): void {
    const s = this.#s;
    const a = s[0] as number;
    const b = s[1] as number;
    let c = s[2] as number;
    const d = s[3] as number;
    const t = (a + b + d) | 0;
    s[3] = d + 1;
    s[0] = b ^ (b >>> 9);
    s[1] = c + (c << 3);
    c = (c << 21) | (c >>> 11);
    s[2] = c + t;
    s[4] = t;
  }

  next(): number {
    this.#advance();
    return ((this.#s[4] as number) >>> 0) / 4294967296;
  }

  int(n: number): number {
    this.#advance();
    return Math.floor((((this.#s[4] as number) >>> 0) / 4294967296) * n);
  }

  /** A new independent generator derived from this one (for per-component streams). */
  fork(): SeededRandom {
    this.#advance();
    return new SeededRandom(this.#s[4] as number);
  }
}

/** A seeded generator; without a seed, one chosen from `Math.random`. */
export function createRandom(seed?: number): SeededRandom {
  return new SeededRandom(seed ?? Math.floor(Math.random() * 4294967296));
}
