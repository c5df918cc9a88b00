/**
 * `peak-ewma`: Linkerd's and Finagle's load model. Draw two (`choiceCount`) distinct
 * endpoints and take the one with the lower cost = peak-sensitive EWMA of latency × (requests
 * in flight + 1) — `EndpointLoad.cost()`. A slow endpoint's estimate jumps at once to a new
 * peak and fades with `decayMs`; an endpoint with nothing observed yet costs `defaultRttMs`,
 * never 0, so new endpoints are probed rather than flooded.
 *
 * `defaultRttMs` and `decayMs` belong to the load records, not the picker: the policy declares
 * them (`BalancingPolicy.loadOptions`) and the `Balancer` builds its `LoadTracker` with them.
 * A pick reads no clock: two candidates are compared at the later of their last observations,
 * where their order is the same as at any later instant (see `cheaper`).
 *
 * Weights: candidates are drawn in proportion to weight and in-flight counts per unit of
 * weight — cost = latency × (in-flight × mean weight / weight + 1) — so with weights unset this
 * is exactly Linkerd's cost, at equal load picks follow weights, and under load in-flight
 * settles in proportion to weight.
 */
import { opt, type Parsed, parseOptions } from '../../../core/options.js';
import { type EndpointLoad, type LoadTracker, loadIndices } from '../../endpoint-load.js';
import type { Picked, PickFn, TrackedEndpoint } from '../../picker.js';
import type { BalancingPolicy } from '../../policy.js';
import { bestOfChoices } from '../../sampling/best-of-choices.js';
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

/**
 * True when endpoint `a` costs less than endpoint `b`. Each estimate decays by the same factor
 * per elapsed ms, so the order of two costs is the same at every instant after both were last
 * observed: compare them at the later of the two stamps. Exact, needs no clock read, and only
 * the older record pays an `exp`. Indices, not numbers, cross the call: a float argument to a
 * call that is not inlined would be boxed on the heap.
 */
function cheaper(loads: readonly EndpointLoad[], perWeight: Float64Array, a: number, b: number): boolean {
  const la = loads[a]!;
  const lb = loads[b]!;
  let costA = la.estimateMs * (la.inFlight * perWeight[a]! + 1);
  let costB = lb.estimateMs * (lb.inFlight * perWeight[b]! + 1);
  const at = la.estimatedAtMs;
  const bt = lb.estimatedAtMs;
  if (at < bt) costA *= Math.exp((at - bt) / la.decayMs);
  else if (bt < at) costB *= Math.exp((bt - at) / lb.decayMs);
  return costA < costB;
}

/**
 * `cheaper` for records of one tracker, read by index from its arrays (the `Balancer`'s case):
 * the same arithmetic, without touching the record handles.
 */
function cheaperAt(
  tracker: LoadTracker,
  indices: Int32Array,
  decayMs: number,
  perWeight: Float64Array,
  a: number,
  b: number,
): boolean {
  const ia = indices[a]!;
  const ib = indices[b]!;
  let costA = tracker.estimateAt(ia) * (tracker.inFlightAt(ia) * perWeight[a]! + 1);
  let costB = tracker.estimateAt(ib) * (tracker.inFlightAt(ib) * perWeight[b]! + 1);
  const at = tracker.estimatedAtMsAt(ia);
  const bt = tracker.estimatedAtMsAt(ib);
  if (at < bt) costA *= Math.exp((at - bt) / decayMs);
  else if (bt < at) costB *= Math.exp((bt - at) / decayMs);
  return costA < costB;
}

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
  choiceCount: (options) => options.choiceCount,
  create(options, env) {
    const random = env.random;
    return {
      build(endpoints: readonly TrackedEndpoint[]): PickFn {
        const results: readonly Picked[] = endpoints.map((t) => t.result);
        const loads: readonly EndpointLoad[] = endpoints.map((t) => t.load);
        const uniform = weightsUniform(endpoints);
        const weights = endpointWeights(endpoints);
        // In-flight per unit of weight, relative to the mean: all 1 when weights are equal.
        const perWeight = uniform ? new Float64Array(results.length).fill(1) : inverseRelativeWeights(weights);
        const at = loadIndices(loads);
        if (at === undefined) {
          return bestOfChoices(results, random, options.choiceCount, uniform ? undefined : weights, (i, j) =>
            cheaper(loads, perWeight, i, j),
          );
        }
        const { tracker, indices } = at;
        const decayMs = tracker.options.decayMs;
        return bestOfChoices(results, random, options.choiceCount, uniform ? undefined : weights, (i, j) =>
          cheaperAt(tracker, indices, decayMs, perWeight, i, j),
        );
      },
    };
  },
};
