/**
 * `least-request`: the power of d random choices. Draw `choiceCount` distinct endpoints at
 * random and take the one with the fewest requests in flight (ties: the first drawn). With
 * d = 2 this is Envoy's default LEAST_REQUEST: near-optimal spread without a global scan.
 * Draws are O(d) and allocation-free (see `CandidateDraw`).
 *
 * Weights: candidates are drawn in proportion to weight and compared by in-flight per unit of
 * weight, so at equal load picks follow weights, and under load in-flight settles in
 * proportion to weight.
 */
import { opt, type Parsed, parseOptions } from '../../../core/options.js';
import type { Picked, PickFn, TrackedEndpoint } from '../../picker.js';
import type { BalancingPolicy } from '../../policy.js';
import { CandidateDraw } from '../../sampling/candidate-draw.js';
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
  create(options, env) {
    const random = env.random;
    return {
      build(endpoints: readonly TrackedEndpoint[]): PickFn {
        const n = endpoints.length;
        const results: readonly Picked[] = endpoints.map((t) => t.result);
        if (n === 1) {
          const only = results[0] as Picked;
          return () => only;
        }
        const loads = endpoints.map((t) => t.load);
        const d = Math.min(options.choiceCount, n);
        if (weightsUniform(endpoints) && d === 2) {
          // The common case, P2C: a distinct uniform pair from two draws, no shuffle state.
          return () => {
            const a = random.int(n);
            let b = random.int(n - 1);
            if (b >= a) b++;
            return loads[b]!.inFlight < loads[a]!.inFlight ? results[b]! : results[a]!;
          };
        }
        if (weightsUniform(endpoints)) {
          const draw = new CandidateDraw(n, random);
          return () => {
            draw.begin();
            let best = draw.next();
            let bestScore = loads[best]!.inFlight;
            for (let c = 1; c < d; c++) {
              const i = draw.next();
              const score = loads[i]!.inFlight;
              if (score < bestScore) {
                best = i;
                bestScore = score;
              }
            }
            return results[best]!;
          };
        }
        const weights = endpointWeights(endpoints);
        const perWeight = inverseRelativeWeights(weights);
        const draw = new CandidateDraw(n, random, weights);
        return () => {
          draw.begin();
          let best = draw.next();
          let bestScore = loads[best]!.inFlight * perWeight[best]!;
          for (let c = 1; c < d; c++) {
            const i = draw.next();
            const score = loads[i]!.inFlight * perWeight[i]!;
            if (score < bestScore) {
              best = i;
              bestScore = score;
            }
          }
          return results[best]!;
        };
      },
    };
  },
};
