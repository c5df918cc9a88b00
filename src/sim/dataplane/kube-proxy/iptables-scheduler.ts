/**
 * kube-proxy's iptables and nftables modes. iptables writes one rule per endpoint, sorted by
 * address, rule i of N matching with `-m statistic --mode random --probability 1/(N−i)` and
 * the last one unconditionally; a connection walks the rules until one matches, so every
 * endpoint is equally likely (1/N), and conntrack pins the connection to that pick. nftables
 * does the same with one `numgen random mod N` lookup. Neither keeps any state.
 */
import type { Random } from '../../../core/random.js';
import type { SimPod } from '../../model/sim-pod.js';
import type { ConnectionScheduler } from './connection-scheduler.js';

/** Up to this many endpoints the rule walk is simulated draw by draw (as the kernel does). */
const WALK_LIMIT = 64;

export class IptablesScheduler implements ConnectionScheduler {
  readonly #random: Random;
  #pods: readonly SimPod[] = [];
  /** Rule i's match probability, 1/(N−i). */
  #probability = new Float64Array(0);

  constructor(random: Random) {
    this.#random = random;
  }

  update(pods: readonly SimPod[]): void {
    this.#pods = pods;
    const n = pods.length;
    this.#probability = new Float64Array(n);
    for (let i = 0; i < n; i++) this.#probability[i] = 1 / (n - i);
  }

  pick(): SimPod | undefined {
    const pods = this.#pods;
    const last = pods.length - 1;
    if (last < 0) return undefined;
    // The walk is uniform (1/N each); beyond a few dozen rules one draw gives the same
    // distribution without N/2 draws per dial (10,000 pods × 1,000,000 dials).
    if (last >= WALK_LIMIT) return pods[this.#random.int(pods.length)];
    for (let i = 0; i < last; i++) if (this.#random.next() < (this.#probability[i] as number)) return pods[i];
    return pods[last];
  }

  opened(): void {}
  closed(): void {}
}

export class NftablesScheduler implements ConnectionScheduler {
  readonly #random: Random;
  #pods: readonly SimPod[] = [];

  constructor(random: Random) {
    this.#random = random;
  }

  update(pods: readonly SimPod[]): void {
    this.#pods = pods;
  }

  pick(): SimPod | undefined {
    const n = this.#pods.length;
    return n === 0 ? undefined : this.#pods[this.#random.int(n)];
  }

  opened(): void {}
  closed(): void {}
}
