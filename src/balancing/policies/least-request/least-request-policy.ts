/**
 * `least-request`: the power of d random choices. Draw `choiceCount` distinct endpoints at
 * random and take the one with the fewest requests in flight (ties: the first drawn). With
 * d = 2 this is Envoy's default LEAST_REQUEST: near-optimal spread without global scans.
 * Weights scale the comparison: in-flight / weight.
 */
import { opt, parseOptions } from '../../../core/options.js';
import type { PickFn, TrackedEndpoint } from '../../picker.js';
import type { BalancingPolicy } from '../../policy.js';

export interface LeastRequestOptions {
  /** How many random endpoints to compare per pick (d); default 2. */
  readonly choiceCount: number;
}

export const leastRequestPolicy: BalancingPolicy<LeastRequestOptions> = {
  name: 'least-request',
  description: 'power of d random choices (default 2) by requests in flight',
  kind: 'load',
  parseOptions: (input) =>
    parseOptions('least-request policy', input, { choiceCount: opt.int({ min: 1, default: 2 }) }),
  create(options, env) {
    const random = env.random;
    return {
      build(endpoints: readonly TrackedEndpoint[]): PickFn {
        const n = endpoints.length;
        const d = Math.min(options.choiceCount, n);
        const uniformWeights = endpoints.every((t) => t.endpoint.weight === endpoints[0]?.endpoint.weight);
        if (n === 1) {
          const only = (endpoints[0] as TrackedEndpoint).result;
          return () => only;
        }
        return () => {
          // Distinct choices without allocation: a random start and a random odd-free stride
          // would bias; instead draw d indices, skipping repeats by linear probing.
          let best = endpoints[random.int(n)] as TrackedEndpoint;
          let bestScore = uniformWeights ? best.load.inFlight : best.load.inFlight / best.endpoint.weight;
          let first = best;
          for (let i = 1; i < d; i++) {
            let c = endpoints[random.int(n)] as TrackedEndpoint;
            if (c === first || c === best) c = endpoints[(endpoints.indexOf(c) + 1) % n] as TrackedEndpoint;
            const score = uniformWeights ? c.load.inFlight : c.load.inFlight / c.endpoint.weight;
            if (score < bestScore) {
              best = c;
              bestScore = score;
            }
            first = c;
          }
          return best.result;
        };
      },
    };
  },
};
