/**
 * `random`: each pick an eligible endpoint chosen uniformly at random, or — when weights
 * differ — in proportion to weight through an alias table (O(1) per pick). Stateless, so it
 * needs no coordination between clients; the spread of requests is binomial, which is why
 * `least-request` usually does better for the same cost.
 */
import { parseOptions } from '../../../core/options.js';
import type { Picked, PickFn, TrackedEndpoint } from '../../picker.js';
import type { BalancingPolicy } from '../../policy.js';
import { AliasTable } from '../../sampling/alias-table.js';
import { endpointWeights, weightsUniform } from '../../sampling/weights.js';

export type RandomOptions = Readonly<Record<string, never>>;

export const randomPolicy: BalancingPolicy<RandomOptions> = {
  name: 'random',
  description: 'uniformly random endpoint (weighted when weights differ)',
  kind: 'load',
  parseOptions: (input) => parseOptions('random policy', input, {}) as RandomOptions,
  create(_options, env) {
    const random = env.random;
    return {
      build(endpoints: readonly TrackedEndpoint[]): PickFn {
        const n = endpoints.length;
        const results: readonly Picked[] = endpoints.map((t) => t.result);
        if (weightsUniform(endpoints)) return () => results[random.int(n)]!;
        const table = new AliasTable(endpointWeights(endpoints));
        return () => results[table.sample(random)]!;
      },
    };
  },
};
