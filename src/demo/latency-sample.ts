/**
 * The demo clients' request latencies, kept as a bounded uniform sample (reservoir sampling,
 * seeded) so a phase of any length costs at most `capacity` numbers, and read as exact
 * quantiles of the sample. The sidecar phase's question — are the clients slow, and how — is
 * answered by this distribution: a mode near 40 ms is Nagle meeting delayed ACKs, a long flat
 * tail is a machine out of CPU.
 */
import type { Random } from '../core/random.js';
import type { ClientLatencyMs } from './protocol.js';

/** Samples kept by default: every request of the default phase (20 clients × 80 req/s × 11 s) and then some. */
export const DEFAULT_LATENCY_SAMPLES = 50_000;

/** A bounded uniform sample of latencies (ms). */
export class LatencySample {
  readonly #values: Float64Array;
  readonly #random: Random;
  #seen = 0;

  constructor(random: Random, capacity = DEFAULT_LATENCY_SAMPLES) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`latency sample: capacity must be a positive integer, got ${capacity}`);
    this.#values = new Float64Array(capacity);
    this.#random = random;
  }

  /** Latencies offered so far (kept or not). */
  get seen(): number {
    return this.#seen;
  }

  /**
   * Offers one latency; every offered value stays in the sample with the same probability.
   *
   * @example
   * const s = new LatencySample(new SeededRandom(1), 1000);
   * s.add(1.5);
   */
  add(latencyMs: number): void {
    const n = this.#seen++;
    if (n < this.#values.length) {
      this.#values[n] = latencyMs;
      return;
    }
    const slot = Math.floor(this.#random.next() * (n + 1));
    if (slot < this.#values.length) this.#values[slot] = latencyMs;
  }

  /**
   * p50, p90, p99 and the largest value of the sample (nearest rank); undefined when empty.
   *
   * @example
   * s.quantiles(); // { p50: 1.5, p90: 1.5, p99: 1.5, max: 1.5 }
   */
  quantiles(): ClientLatencyMs | undefined {
    const kept = Math.min(this.#seen, this.#values.length);
    if (kept === 0) return undefined;
    const sorted = this.#values.slice(0, kept).sort();
    const at = (q: number): number => sorted[Math.min(kept - 1, Math.ceil(q * kept) - 1)] as number;
    return { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted[kept - 1] as number };
  }
}
