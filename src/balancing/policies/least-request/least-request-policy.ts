/**
 * `least-request`: the power of d random choices. Draw `choiceCount` distinct endpoints at
 * random and take the one with the fewest requests in flight (ties: the first drawn). With
 * d = 2 this is Envoy's default LEAST_REQUEST: near-optimal spread without a global scan.
 * Draws are O(d) and allocation-free (see `bestOfChoices`).
 *
 * Weights: candidates are drawn in proportion to weight and compared by in-flight per unit of
 * weight, so at equal load picks follow weights, and under load in-flight settles in
 * proportion to weight.
 */
import { opt, type Parsed, parseOptions } from '../../../core/options.js';
import { loadIndices } from '../../endpoint-load.js';
import type { Picked, PickFn, TrackedEndpoint } from '../../picker.js';
import type { BalancingPolicy } from '../../policy.js';
import { bestOfChoices } from '../../sampling/best-of-choices.js';
import { endpointWeights, inverseRelativeWeights, weightsUniform } from '../../sampling/weights.js';

const spec = {
  /** How many distinct random endpoints to compare per pick (d); default 2. */
  choiceCount: opt.int({ min: 1, max: 64, default: 2 }),
};

export type LeastRequestOptions = Parsed<typeof spec>;

export const leastRequestPolicy: BalancingPolicy<LeastRequestOptions> = {
  name: 'least-request',
  description: 'power of d random choices (default 2) by requests in flight',
  kind: 'load',
  parseOptions: (input) => parseOptions('least-request policy', input, spec),
  choiceCount: (options) => options.choiceCount,
  create(options, env) {
    const random = env.random;
    return {
      build(endpoints: readonly TrackedEndpoint[]): PickFn {
        const results: readonly Picked[] = endpoints.map((t) => t.result);
        const loads = endpoints.map((t) => t.load);
        // The hot path reads in-flight counts from the tracker's dense array, not the handles.
        const at = loadIndices(loads);
        const inFlight =
          at === undefined ? (i: number) => loads[i]!.inFlight : (i: number) => at.tracker.inFlightAt(at.indices[i]!);
        if (weightsUniform(endpoints)) {
          return bestOfChoices(results, random, options.choiceCount, undefined, (i, j) => inFlight(i) < inFlight(j));
        }
        const weights = endpointWeights(endpoints);
        const perWeight = inverseRelativeWeights(weights);
        return bestOfChoices(
          results,
          random,
          options.choiceCount,
          weights,
          (i, j) => inFlight(i) * perWeight[i]! < inFlight(j) * perWeight[j]!,
        );
      },
    };
  },
};
