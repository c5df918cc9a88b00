/**
 * `weighted-round-robin`: smooth weighted rotation by earliest-deadline-first scheduling
 * (Envoy's WRR; the same interleaving as nginx's smooth WRR, in O(log n) instead of O(n) per
 * pick). With equal weights it is a plain rotation.
 *
 * State survives picker rebuilds: an endpoint that stays keeps its place in the schedule (its
 * time to next turn; rescaled if its weight changed), a new endpoint starts at a random phase
 * of its period, so endpoint churn neither resets nor biases the rotation. The first schedule
 * spreads endpoints' phases evenly from a random shift, so many clients do not pick in step.
 */
import { parseOptions } from '../../../core/options.js';
import type { Picked, PickFn, TrackedEndpoint } from '../../picker.js';
import type { BalancingPolicy, PickerBuilder, PolicyEnv } from '../../policy.js';
import { endpointWeights } from '../../sampling/weights.js';
import { EdfSchedule } from './edf-schedule.js';

/** 1/φ: successive multiples mod 1 are as evenly spread as any sequence can be. */
const GOLDEN_FRACTION = 0.6180339887498949;

export type WeightedRoundRobinOptions = Readonly<Record<string, never>>;

/**
 * The EDF picker builder, also behind `report-weighted` (whose weights the `Balancer` plans from
 * load reports): one schedule per balancer, carried across rebuilds.
 */
export class WeightedRoundRobinBuilder implements PickerBuilder {
  readonly #env: PolicyEnv;
  #last: EdfSchedule | undefined;

  constructor(env: PolicyEnv) {
    this.#env = env;
  }

  build(endpoints: readonly TrackedEndpoint[]): PickFn {
    const n = endpoints.length;
    const results: readonly Picked[] = endpoints.map((t) => t.result);
    const keys = endpoints.map((t) => t.endpoint.key);
    const weights = endpointWeights(endpoints);
    const deadlines = new Float64Array(n);
    const previous = this.#last;
    const before = new Map<string, number>(previous?.keys.map((k, i) => [k, i]));
    const remaining = previous?.remainingAll();
    // First schedule: phases spread by the golden ratio from a random shift, so endpoints of
    // equal weight take turns evenly spaced and clients do not march in step.
    const shift = previous === undefined ? this.#env.random.next() : 0;
    for (let i = 0; i < n; i++) {
      const j = before.get(keys[i]!);
      const w = weights[i]!;
      if (previous === undefined) {
        deadlines[i] = ((shift + i * GOLDEN_FRACTION) % 1) / w;
      } else if (j !== undefined && remaining !== undefined) {
        // Keep the phase: the same fraction of the period remains, whatever the weight now is.
        deadlines[i] = (remaining[j]! * previous.weights[j]!) / w;
      } else {
        deadlines[i] = this.#env.random.next() / w;
      }
    }
    const schedule = new EdfSchedule(keys, weights, deadlines);
    this.#last = schedule;
    return () => results[schedule.pick()]!;
  }
}

export const weightedRoundRobinPolicy: BalancingPolicy<WeightedRoundRobinOptions> = {
  name: 'weighted-round-robin',
  description: 'smooth weighted rotation (earliest deadline first); state kept across endpoint changes',
  kind: 'load',
  parseOptions: (input) => parseOptions('weighted-round-robin policy', input, {}) as WeightedRoundRobinOptions,
  create: (_options, env) => new WeightedRoundRobinBuilder(env),
};
