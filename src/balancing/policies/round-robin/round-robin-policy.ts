/**
 * `round-robin`: each eligible endpoint in turn, in the order discovery lists them, starting
 * at a random offset so that many clients do not all start on the same endpoint. Weights are
 * ignored on purpose (as gRPC's `round_robin` and IPVS `rr`); use `weighted-round-robin` for
 * weights.
 *
 * The position survives picker rebuilds: a new picker resumes right after the endpoint picked
 * last, or — if that endpoint is gone — at the first endpoint that followed it in the previous
 * list and is still present. Frequent endpoint changes therefore neither skip nor favour anyone.
 *
 * New endpoints are the exception. When A never-seen endpoints join a list of N (a scale-out,
 * a rollout's new pods), every client's position still lies among the old ones, so many
 * clients rotating in step would reach the new endpoints in waves (after a 500 → 1,000
 * scale-out the new half took 25% of picks, then 75%). So a client jumps, with probability
 * A/N, to a random one of the new endpoints; positions are then uniform over the grown list
 * again. An endpoint coming back (readiness flapping) is not new and causes no jump, so
 * flapping neither skips nor favours anyone.
 *
 * Pushback is the one thing it does not ignore: the `Balancer` hands it each endpoint's own
 * weight times the pushback penalty (see `shaping/pushback-penalty.ts`), and an endpoint whose
 * ratio is below the highest takes its turn with probability ratio / highest, else the turn
 * passes on — so a penalised endpoint's share drops by its penalty and the others' rise evenly.
 * With no penalty every ratio is 1 and a pick is the plain rotation, with no random draw.
 */
import { parseOptions } from '../../../core/options.js';
import type { Picked, PickFn, TrackedEndpoint } from '../../picker.js';
import type { BalancingPolicy, PickerBuilder, PolicyEnv } from '../../policy.js';

export type RoundRobinOptions = Readonly<Record<string, never>>;

/** Where rotation stands: the list last picked from and the index picked in it (-1: none yet). */
interface Position {
  list: readonly TrackedEndpoint[];
  index: number;
}

class RoundRobinBuilder implements PickerBuilder {
  readonly #env: PolicyEnv;
  readonly #position: Position = { list: [], index: -1 };
  /** Endpoint keys this builder has seen; reset when it outgrows the live list fourfold. */
  #seen = new Set<string>();

  constructor(env: PolicyEnv) {
    this.#env = env;
  }

  build(endpoints: readonly TrackedEndpoint[]): PickFn {
    const n = endpoints.length;
    const results: readonly Picked[] = endpoints.map((t) => t.result);
    const position = this.#position;
    let next = this.#resume(endpoints);
    this.#remember(endpoints);
    const accept = turnChances(endpoints);
    if (accept === undefined) {
      return () => {
        const i = next;
        next = i + 1 === n ? 0 : i + 1;
        position.list = endpoints;
        position.index = i;
        return results[i]!;
      };
    }
    const random = this.#env.random;
    return () => {
      // The endpoint with the highest ratio always takes its turn, so this ends within n steps.
      for (let step = 0; ; step++) {
        const i = next;
        next = i + 1 === n ? 0 : i + 1;
        const chance = accept[i]!;
        if (chance >= 1 || step >= n || random.next() < chance) {
          position.list = endpoints;
          position.index = i;
          return results[i]!;
        }
      }
    };
  }

  /** The index in `endpoints` at which rotation continues. */
  #resume(endpoints: readonly TrackedEndpoint[]): number {
    const { list, index } = this.#position;
    const random = this.#env.random;
    if (index < 0) return random.int(endpoints.length);
    const added = this.#unseen(endpoints);
    if (added.length > 0 && random.next() * endpoints.length < added.length) return added[random.int(added.length)]!;
    const at = new Map<string, number>(endpoints.map((t, i) => [t.endpoint.key, i]));
    const last = at.get(list[index]!.endpoint.key);
    if (last !== undefined) return (last + 1) % endpoints.length;
    for (let step = 1; step < list.length; step++) {
      const found = at.get(list[(index + step) % list.length]!.endpoint.key);
      if (found !== undefined) return found;
    }
    return this.#env.random.int(endpoints.length);
  }

  /** Indexes of endpoints never seen before. */
  #unseen(endpoints: readonly TrackedEndpoint[]): number[] {
    const out: number[] = [];
    endpoints.forEach((t, i) => {
      if (!this.#seen.has(t.endpoint.key)) out.push(i);
    });
    return out;
  }

  #remember(endpoints: readonly TrackedEndpoint[]): void {
    if (this.#seen.size > 4 * endpoints.length + 64) this.#seen = new Set();
    for (const t of endpoints) this.#seen.add(t.endpoint.key);
  }
}

/**
 * Each endpoint's chance to take its turn: its planned weight over its own weight (the
 * pushback penalty), relative to the highest; undefined when all are equal (no penalty).
 */
function turnChances(endpoints: readonly TrackedEndpoint[]): Float64Array | undefined {
  const ratios = new Float64Array(endpoints.length);
  let highest = 0;
  let lowest = Number.POSITIVE_INFINITY;
  endpoints.forEach((t, i) => {
    const own = t.endpoint.weight > 0 ? t.endpoint.weight : 1;
    const r = t.weight / own;
    ratios[i] = r;
    highest = Math.max(highest, r);
    lowest = Math.min(lowest, r);
  });
  if (!(highest > 0) || lowest === highest) return undefined;
  for (let i = 0; i < ratios.length; i++) ratios[i] = ratios[i]! / highest;
  return ratios;
}

export const roundRobinPolicy: BalancingPolicy<RoundRobinOptions> = {
  name: 'round-robin',
  description: 'each eligible endpoint in turn, from a random start; fair across endpoint changes; ignores weights',
  kind: 'load',
  ignoresWeights: true,
  parseOptions: (input) => parseOptions('round-robin policy', input, {}) as RoundRobinOptions,
  create: (_options, env) => new RoundRobinBuilder(env),
};
