/**
 * kube-apiserver's webhook client with round-trip load balancing (the fix behind the
 * `WebhookRoundTripLoadBalancing` gate): the Service is resolved to a random ready endpoint
 * on every round trip and the request goes to `podIP:port`, so the pool is keyed by endpoint
 * and a cached connection can no longer pin the choice.
 */
import type { SimPod } from '../../model/sim-pod.js';
import type { SimulationContext } from '../../model/simulation-context.js';
import type { RequestPicker } from '../per-request-router.js';

export class RoundTripPicker implements RequestPicker {
  readonly #ctx: SimulationContext;

  constructor(ctx: SimulationContext) {
    this.#ctx = ctx;
  }

  update(): void {}

  pick(): SimPod | undefined {
    const pods = this.#ctx.eligiblePods;
    const n = pods.length;
    return n === 0 ? undefined : pods[this.#ctx.streams.dataplane.int(n)];
  }

  done(): void {}
}
