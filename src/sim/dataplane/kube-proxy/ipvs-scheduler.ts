/**
 * kube-proxy's IPVS mode, with the kernel schedulers' behaviour and — the point — their
 * state kept separately on every node:
 *
 * - `rr`: each node walks the destination list from where it last stopped (a fresh service
 *   starts at the head); a removed destination hands its place to the next one.
 * - `lc`: the destination with the fewest active connections *from this node* (ties: first
 *   in the list); other nodes' connections are invisible.
 * - `sh`: a 256-bucket table filled round-robin with the destinations, indexed by a hash of
 *   the client's source address; the same client always lands on the same pod until the
 *   destination list changes.
 *
 * Destinations keep the order they were added in: the initial ones sorted by address, later
 * ones appended.
 */
import type { SimClient } from '../../model/sim-client.js';
import type { SimPod } from '../../model/sim-pod.js';
import type { ConnectionScheduler } from './connection-scheduler.js';

export type IpvsAlgorithm = 'rr' | 'lc' | 'sh';

const SH_TABLE_BITS = 8;
const SH_TABLE_SIZE = 1 << SH_TABLE_BITS;
/** The kernel's GOLDEN_RATIO_32 (hash_32). */
const GOLDEN_RATIO_32 = 0x61c88647;

export class IpvsScheduler implements ConnectionScheduler {
  readonly #algorithm: IpvsAlgorithm;
  readonly #nodes: number;
  #dests: SimPod[] = [];
  /** rr: per node, the destination picked last and its index in `#dests` (-1: before the head). */
  readonly #last: (SimPod | undefined)[];
  readonly #lastIndex: Int32Array;
  /** lc: active connections per node × pod index. */
  #active: Int32Array;
  #stride = 64;
  readonly #shTable: (SimPod | undefined)[] = new Array(SH_TABLE_SIZE).fill(undefined);

  constructor(algorithm: IpvsAlgorithm, nodes: number) {
    this.#algorithm = algorithm;
    this.#nodes = nodes;
    this.#last = new Array(nodes).fill(undefined);
    this.#lastIndex = new Int32Array(nodes).fill(-1);
    this.#active = new Int32Array(nodes * this.#stride);
  }

  update(pods: readonly SimPod[]): void {
    const keep = new Set(pods);
    const old = this.#dests;
    const next = old.filter((p) => keep.has(p));
    const known = new Set(next);
    for (const p of pods) if (!known.has(p)) next.push(p);
    for (let n = 0; n < this.#nodes; n++) {
      const last = this.#last[n];
      if (last === undefined) continue;
      const at = next.indexOf(last);
      if (at >= 0) this.#lastIndex[n] = at;
      else {
        // The last-picked destination left: continue with the first survivor that followed it.
        let before = 0;
        for (let i = 0; i < old.length && old[i] !== last; i++) if (keep.has(old[i] as SimPod)) before++;
        this.#lastIndex[n] = before - 1;
        this.#last[n] = undefined;
      }
    }
    this.#dests = next;
    const n = next.length;
    for (let b = 0; b < SH_TABLE_SIZE; b++) this.#shTable[b] = n === 0 ? undefined : next[b % n];
  }

  pick(client: SimClient): SimPod | undefined {
    const dests = this.#dests;
    const n = dests.length;
    if (n === 0) return undefined;
    const node = client.node;
    switch (this.#algorithm) {
      case 'rr': {
        const i = ((this.#lastIndex[node] as number) + 1) % n;
        this.#lastIndex[node] = i;
        const pod = dests[i] as SimPod;
        this.#last[node] = pod;
        return pod;
      }
      case 'lc': {
        const base = node * this.#stride;
        let best = dests[0] as SimPod;
        let bestCount = this.#count(base, best);
        for (let i = 1; i < n; i++) {
          const p = dests[i] as SimPod;
          const c = this.#count(base, p);
          if (c < bestCount) {
            best = p;
            bestCount = c;
          }
        }
        return best;
      }
      case 'sh': {
        const bucket = Math.imul(client.addressU32, GOLDEN_RATIO_32) >>> (32 - SH_TABLE_BITS);
        return this.#shTable[bucket];
      }
    }
  }

  opened(client: SimClient, pod: SimPod): void {
    if (this.#algorithm !== 'lc') return;
    this.#ensure(pod.index);
    const i = client.node * this.#stride + pod.index;
    this.#active[i] = (this.#active[i] as number) + 1;
  }

  closed(client: SimClient, pod: SimPod): void {
    if (this.#algorithm !== 'lc') return;
    const i = client.node * this.#stride + pod.index;
    this.#active[i] = (this.#active[i] as number) - 1;
  }

  #count(base: number, pod: SimPod): number {
    return pod.index < this.#stride ? (this.#active[base + pod.index] as number) : 0;
  }

  #ensure(podIndex: number): void {
    if (podIndex < this.#stride) return;
    let stride = this.#stride;
    while (stride <= podIndex) stride *= 2;
    const next = new Int32Array(this.#nodes * stride);
    for (let n = 0; n < this.#nodes; n++) {
      next.set(this.#active.subarray(n * this.#stride, (n + 1) * this.#stride), n * stride);
    }
    this.#active = next;
    this.#stride = stride;
  }
}
