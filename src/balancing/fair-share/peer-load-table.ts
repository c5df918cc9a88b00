/**
 * What a pod knows of its peers' load: the last answer of each peer, with its time. Each period
 * the pod asks only `peersPerPeriod` peers chosen at random (so the cost per pod does not grow
 * with the fleet: 1,000 pods ask 3,000 questions per period, not a million) and estimates the
 * fleet mean from the answers younger than `peerTtlMs`. Peers that left the Service are
 * forgotten at once. Pure: the caller does the asking.
 */
import type { Random } from '../../core/random.js';

interface Sample {
  readonly load: number;
  readonly atMs: number;
}

export class PeerLoadTable {
  readonly #peersPerPeriod: number;
  readonly #ttlMs: number;
  readonly #random: Random;
  #peers: readonly string[] = [];
  readonly #samples = new Map<string, Sample>();

  constructor(options: { readonly peersPerPeriod: number; readonly peerTtlMs: number }, random: Random) {
    this.#peersPerPeriod = options.peersPerPeriod;
    this.#ttlMs = options.peerTtlMs;
    this.#random = random;
  }

  /** The current peers (every eligible endpoint but this pod), by key. */
  setPeers(keys: readonly string[]): void {
    this.#peers = [...keys];
    const keep = new Set(keys);
    for (const k of this.#samples.keys()) if (!keep.has(k)) this.#samples.delete(k);
  }

  get peers(): readonly string[] {
    return this.#peers;
  }

  /** Up to `peersPerPeriod` distinct peers, uniformly at random. */
  pickPeers(): string[] {
    const peers = this.#peers;
    const k = Math.min(this.#peersPerPeriod, peers.length);
    if (k === peers.length) return [...peers];
    const chosen = new Set<number>();
    // Rejection sampling: O(k) draws on average while k ≤ n/2, independent of n.
    if (k <= peers.length / 2) {
      while (chosen.size < k) chosen.add(this.#random.int(peers.length));
      return [...chosen].map((i) => peers[i] as string);
    }
    const order = peers.map((_, i) => i);
    for (let i = 0; i < k; i++) {
      const j = i + this.#random.int(order.length - i);
      [order[i], order[j]] = [order[j] as number, order[i] as number];
    }
    return order.slice(0, k).map((i) => peers[i] as string);
  }

  /** Records `key`'s answer (ignored for a peer no longer listed). */
  record(key: string, load: number, nowMs: number): void {
    if (!this.#peers.includes(key)) return;
    this.#samples.set(key, { load, atMs: nowMs });
  }

  /** Loads answered within `peerTtlMs` of `nowMs`. */
  freshLoads(nowMs: number): number[] {
    const out: number[] = [];
    for (const s of this.#samples.values()) if (nowMs - s.atMs <= this.#ttlMs) out.push(s.load);
    return out;
  }
}
