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
import type { Random } from '../../../core/random.js';
import { type EndpointLoad, loadIndices } from '../../endpoint-load.js';
import type { Picked, PickFn, TrackedEndpoint } from '../../picker.js';
import type { BalancingPolicy } from '../../policy.js';
import { bestOfChoices } from '../../sampling/best-of-choices.js';
import { endpointWeights, inverseRelativeWeights, weightsUniform } from '../../sampling/weights.js';

const spec = {
  /** How many distinct random endpoints to compare per pick (d); default 2. */
  choiceCount: opt.int({ min: 1, max: 64, default: 2 }),
};

export type LeastRequestOptions = Parsed<typeof spec>;

/**
 * The comparison "candidate i has fewer in flight (per unit of weight) than j". It reads the
 * tracker's dense in-flight array (by position when records sit at their own positions, else
 * through the index array), not the record handles: in a fleet of balancers over thousands of
 * endpoints the handles are what misses the cache. One closure per case keeps each call site
 * monomorphic.
 */
function fewerInFlight(
  loads: readonly EndpointLoad[],
  perWeight: Float64Array | undefined,
): (i: number, j: number) => boolean {
  const at = loadIndices(loads);
  if (at === undefined) {
    return perWeight === undefined
      ? (i, j) => loads[i]!.inFlight < loads[j]!.inFlight
      : (i, j) => loads[i]!.inFlight * perWeight[i]! < loads[j]!.inFlight * perWeight[j]!;
  }
  const { tracker, indices } = at;
  if (at.identity) {
    if (perWeight === undefined) {
      return (i, j) => {
        const counts = tracker.inFlightCounts;
        return counts[i]! < counts[j]!;
      };
    }
    return (i, j) => {
      const counts = tracker.inFlightCounts;
      return counts[i]! * perWeight[i]! < counts[j]! * perWeight[j]!;
    };
  }
  if (perWeight === undefined) {
    return (i, j) => {
      const counts = tracker.inFlightCounts;
      return counts[indices[i]!]! < counts[indices[j]!]!;
    };
  }
  return (i, j) => {
    const counts = tracker.inFlightCounts;
    return counts[indices[i]!]! * perWeight[i]! < counts[indices[j]!]! * perWeight[j]!;
  };
}

/**
 * The least-request pick function over `endpoints` (also `prequal`'s fallback): best of
 * `choiceCount` random candidates by in-flight per unit of weight, drawn by weight.
 *
 * @example
 * const pick = leastRequestPick(endpoints, random, 2);
 */
export function leastRequestPick(endpoints: readonly TrackedEndpoint[], random: Random, choiceCount: number): PickFn {
  const results: readonly Picked[] = endpoints.map((t) => t.result);
  const loads = endpoints.map((t) => t.load);
  if (weightsUniform(endpoints)) {
    return bestOfChoices(results, random, choiceCount, undefined, fewerInFlight(loads, undefined));
  }
  const weights = endpointWeights(endpoints);
  const perWeight = inverseRelativeWeights(weights);
  return bestOfChoices(results, random, choiceCount, weights, fewerInFlight(loads, perWeight));
}

export const leastRequestPolicy: BalancingPolicy<LeastRequestOptions> = {
  name: 'least-request',
  description: 'power of d random choices (default 2) by requests in flight',
  kind: 'load',
  parseOptions: (input) => parseOptions('least-request policy', input, spec),
  choiceCount: (options) => options.choiceCount,
  create(options, env) {
    return { build: (endpoints) => leastRequestPick(endpoints, env.random, options.choiceCount) };
  },
};
