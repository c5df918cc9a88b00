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
  #a: number;
  #b: number;
  #c: number;
  #d: number;
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
    this.#a = mix();
    this.#b = mix();
    this.#c = mix();
    this.#d = mix();
    for (let i = 0; i < 12; i++) this.#u32();
  }

  #u32(): number {
    const t = (((this.#a + this.#b) >>> 0) + this.#d) >>> 0;
    this.#d = (this.#d + 1) >>> 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) >>> 0;
    this.#c = (this.#c << 21) | (this.#c >>> 11);
    this.#c = (this.#c + t) >>> 0;
    return t;
  }

  next(): number {
    return this.#u32() / 4294967296;
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** A new independent generator derived from this one (for per-component streams). */
  fork(): SeededRandom {
    return new SeededRandom(this.#u32());
  }
}

/** A seeded generator; without a seed, one chosen from `Math.random`. */
export function createRandom(seed?: number): SeededRandom {
  return new SeededRandom(seed ?? Math.floor(Math.random() * 4294967296));
}
