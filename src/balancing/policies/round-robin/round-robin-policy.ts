/**
 * `round-robin`: each endpoint in turn, starting at a random offset so that many clients do
 * not all start on the first endpoint. The position is an endpoint key remembered across
 * picker rebuilds: when the set changes, rotation resumes after the last endpoint picked
 * instead of restarting, so no endpoint is skipped or favoured by frequent updates.
 */
import { parseOptions } from '../../../core/options.js';
import type { PickFn, TrackedEndpoint } from '../../picker.js';
import type { BalancingPolicy, PickerBuilder, PolicyEnv } from '../../policy.js';

export type RoundRobinOptions = Record<string, never>;

class RoundRobinBuilder implements PickerBuilder {
  readonly #env: PolicyEnv;
  #lastKey: string | undefined;

  constructor(env: PolicyEnv) {
    this.#env = env;
  }

  build(endpoints: readonly TrackedEndpoint[]): PickFn {
    const n = endpoints.length;
    let next: number;
    const lastIndex = this.#lastKey === undefined ? -1 : endpoints.findIndex((t) => t.endpoint.key === this.#lastKey);
    if (lastIndex >= 0) next = (lastIndex + 1) % n;
    else if (this.#lastKey !== undefined) {
      // The last-picked endpoint is gone: continue at the first endpoint sorting after it.
      const last = this.#lastKey;
      const after = endpoints.findIndex((t) => t.endpoint.key > last);
      next = Math.max(after, 0);
    } else next = this.#env.random.int(n);
    return () => {
      const t = endpoints[next] as TrackedEndpoint;
      next = next + 1 === n ? 0 : next + 1;
      this.#lastKey = t.endpoint.key;
      return t.result;
    };
  }
}

export const roundRobinPolicy: BalancingPolicy<RoundRobinOptions> = {
  name: 'round-robin',
  description: 'each eligible endpoint in turn, from a random start; fair across endpoint changes',
  kind: 'load',
  parseOptions: (input) => parseOptions('round-robin policy', input, {}) as RoundRobinOptions,
  create: (_options, env) => new RoundRobinBuilder(env),
};
