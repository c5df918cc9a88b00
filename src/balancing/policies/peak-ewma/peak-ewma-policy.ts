/**
 * `peak-ewma`: Linkerd's and Finagle's load model. Draw two (`choiceCount`) distinct
 * endpoints and take the one with the lower cost = peak-sensitive EWMA of latency × (requests
 * in flight + 1) — `EndpointLoad.cost()`. A slow endpoint's estimate jumps at once to a new
 * peak and fades with `decayMs`; an endpoint with nothing observed yet costs `defaultRttMs`,
 * never 0, so new endpoints are probed rather than flooded.
 *
 * `defaultRttMs` and `decayMs` belong to the load records, not the picker: the policy declares
 * them (`BalancingPolicy.loadOptions`) and the `Balancer` builds its `LoadTracker` with them.
 *
 * Weights: candidates are drawn in proportion to weight and in-flight counts per unit of
 * weight — cost = latency × (in-flight × mean weight / weight + 1) — so with weights unset this
 * is exactly Linkerd's cost, at equal load picks follow weights, and under load in-flight
 * settles in proportion to weight.
 */
import { opt, type Parsed, parseOptions } from '../../../core/options.js';
import type { Picked, PickFn, TrackedEndpoint } from '../../picker.js';
import type { BalancingPolicy } from '../../policy.js';
import { CandidateDraw } from '../../sampling/candidate-draw.js';
import { endpointWeights, inverseRelativeWeights, weightsUniform } from '../../sampling/weights.js';

const spec = {
  /** Distinct random endpoints compared per pick; default 2 (P2C). */
  choiceCount: opt.int({ min: 1, max: 64, default: 2 }),
  /** Latency (ms) assumed before an endpoint's first response; default: the load tracker's (30). */
  defaultRttMs: opt.number({ min: 0, exclusiveMin: true, optional: true }),
  /** EWMA time constant (ms); default: the load tracker's (10,000). */
  decayMs: opt.number({ min: 0, exclusiveMin: true, optional: true }),
};

export type PeakEwmaOptions = Parsed<typeof spec>;

export const peakEwmaPolicy: BalancingPolicy<PeakEwmaOptions> = {
  name: 'peak-ewma',
  description: 'P2C by peak-EWMA latency × (in flight + 1), as Linkerd (defaultRttMs, decayMs)',
  kind: 'load',
  parseOptions: (input) => parseOptions('peak-ewma policy', input, spec),
  loadOptions(options) {
    return {
      ...(options.defaultRttMs === undefined ? {} : { defaultRttMs: options.defaultRttMs }),
      ...(options.decayMs === undefined ? {} : { decayMs: options.decayMs }),
    };
  },
  create(options, env) {
    const { random, clock } = env;
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
        if (weightsUniform(endpoints)) {
          const draw = new CandidateDraw(n, random);
          return () => {
            const now = clock.now();
            draw.begin();
            let best = draw.next();
            let bestCost = loads[best]!.cost(now);
            for (let c = 1; c < d; c++) {
              const i = draw.next();
              const cost = loads[i]!.cost(now);
              if (cost < bestCost) {
                best = i;
                bestCost = cost;
              }
            }
            return results[best]!;
          };
        }
        const weights = endpointWeights(endpoints);
        const perWeight = inverseRelativeWeights(weights);
        const draw = new CandidateDraw(n, random, weights);
        return () => {
          const now = clock.now();
          draw.begin();
          let best = draw.next();
          let load = loads[best]!;
          let bestCost = load.latencyMs(now) * (load.inFlight * perWeight[best]! + 1);
          for (let c = 1; c < d; c++) {
            const i = draw.next();
            load = loads[i]!;
            const cost = load.latencyMs(now) * (load.inFlight * perWeight[i]! + 1);
            if (cost < bestCost) {
              best = i;
              bestCost = cost;
            }
          }
          return results[best]!;
        };
      },
    };
  },
};
