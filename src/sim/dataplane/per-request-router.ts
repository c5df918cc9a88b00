/**
 * Requests routed one by one: a `RequestPicker` chooses the pod for every request, so
 * connections do not constrain placement (pools are keyed by endpoint) and are not modelled.
 * Used by the apiserver's round-trip fix and by every evenlb policy.
 */
import type { SimClient } from '../model/sim-client.js';
import type { SimPod } from '../model/sim-pod.js';
import type { SimulationContext } from '../model/simulation-context.js';
import { type DataplaneCounters, NO_COUNTERS, type RequestRouter } from './dataplane.js';

export interface RequestPicker {
  /** The eligible endpoints changed. */
  update(): void;
  /** The pod for request `slot` from `client`, or undefined when none is eligible. */
  pick(client: SimClient, slot: number): SimPod | undefined;
  /** Request `slot` finished. */
  done(slot: number): void;
  /** The pod rejected request `slot` (see `RequestRouter.rejected`). */
  rejected?(slot: number): void;
  counters?(): DataplaneCounters;
}

export class PerRequestRouter implements RequestRouter {
  readonly #ctx: SimulationContext;
  readonly #picker: RequestPicker;

  constructor(ctx: SimulationContext, picker: RequestPicker) {
    this.#ctx = ctx;
    this.#picker = picker;
  }

  start(): void {}

  send(client: SimClient, slot: number): void {
    const pod = this.#picker.pick(client, slot);
    if (pod === undefined) this.#ctx.fail(slot);
    else this.#ctx.deliver(slot, pod);
  }

  done(slot: number): void {
    this.#picker.done(slot);
  }

  rejected(slot: number): void {
    this.#picker.rejected?.(slot);
  }

  counters(): DataplaneCounters {
    return this.#picker.counters?.() ?? NO_COUNTERS;
  }

  endpointsChanged(): void {
    this.#picker.update();
  }

  podGone(): void {}
}
