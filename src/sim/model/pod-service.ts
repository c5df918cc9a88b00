/**
 * How long a request takes once a worker of its pod takes it. A request needs a service time
 * drawn from `pods.serviceTime` (the time at speed 1); a pod works through it at its `rate` —
 * its speed divided by its slowdown, 0 while paused.
 *
 * Pods of constant speed (no pauses, episodes or slowdown events in the scenario) take the
 * short path: one completion event at `now + service / speed`, exactly as the simulator always
 * did. Otherwise every pod runs a work clock (work done at speed 1, advancing at its rate) and
 * keeps the list of its requests in service with the clock reading at which each is done; when
 * its rate changes, every request in service is rescheduled from its remaining work, and the
 * older completion events become stale (a per-slot generation recognises them). So a pause
 * freezes what is in service and a slowdown stretches it from the moment it starts — not only
 * for requests that start afterwards.
 */
import type { SeededRandom } from '../../core/random.js';
import type { Scheduler } from '../engine/scheduler.js';
import type { Sampler } from '../workload/distribution.js';
import type { RequestTable } from './request-table.js';
import type { SimPod } from './sim-pod.js';

/** A pod's work clock and its requests in service (pods whose rate changes). */
class WorkClock {
  /** Work done (ms at speed 1) up to `atMs`. */
  workMs = 0;
  atMs: number;
  rate: number;
  /** Slots in service, the first `count` entries. */
  readonly slots: Int32Array;
  count = 0;

  constructor(pod: SimPod, nowMs: number) {
    this.atMs = nowMs;
    this.rate = pod.rate;
    this.slots = new Int32Array(pod.workers);
  }

  workAt(nowMs: number): number {
    return this.workMs + this.rate * (nowMs - this.atMs);
  }
}

export interface PodServiceInit {
  readonly scheduler: Scheduler;
  readonly requests: RequestTable;
  readonly service: Sampler;
  readonly random: SeededRandom;
  /** Some pod's rate may change during the run (pauses, episodes, slowdown events). */
  readonly changingRates: boolean;
  /** Request `slot` has been served (its pod's worker is free again). */
  readonly done: (slot: number) => void;
}

export class PodService {
  readonly #scheduler: Scheduler;
  readonly #requests: RequestTable;
  readonly #service: Sampler;
  readonly #random: SeededRandom;
  readonly #changingRates: boolean;
  readonly #clocks: (WorkClock | undefined)[] = [];
  readonly #kDone: number;
  readonly #kClockDone: number;

  constructor(init: PodServiceInit) {
    this.#scheduler = init.scheduler;
    this.#requests = init.requests;
    this.#service = init.service;
    this.#random = init.random;
    this.#changingRates = init.changingRates;
    const done = init.done;
    this.#kDone = init.scheduler.register(done);
    this.#kClockDone = init.scheduler.register((slot, generation) => {
      if (generation !== this.#requests.serviceGen[slot]) return;
      this.#leave(slot);
      done(slot);
    });
  }

  /** A worker of `pod` takes request `slot` now. */
  start(pod: SimPod, slot: number): void {
    const now = this.#scheduler.now;
    pod.startService(now);
    const serviceMs = this.#service.sample(this.#random);
    if (!this.#changingRates) {
      this.#scheduler.after(serviceMs / pod.speed, this.#kDone, slot);
      return;
    }
    const clock = this.#clock(pod, now);
    const req = this.#requests;
    req.workTarget[slot] = clock.workAt(now) + serviceMs;
    req.servicePos[slot] = clock.count;
    clock.slots[clock.count++] = slot;
    const generation = nextGeneration(req, slot);
    if (clock.rate > 0) this.#scheduler.after(serviceMs / clock.rate, this.#kClockDone, slot, generation);
  }

  /** `pod.rate` changed now (a pause or an episode started or ended): reschedule what it serves. */
  rateChanged(pod: SimPod): void {
    if (!this.#changingRates) throw new Error('PodService: a pod rate changed in a run of constant rates');
    const now = this.#scheduler.now;
    const clock = this.#clock(pod, now);
    clock.workMs = clock.workAt(now);
    clock.atMs = now;
    clock.rate = pod.rate;
    const req = this.#requests;
    for (let i = 0; i < clock.count; i++) {
      const slot = clock.slots[i] as number;
      const generation = nextGeneration(req, slot);
      if (clock.rate > 0) {
        const remainingMs = (req.workTarget[slot] as number) - clock.workMs;
        this.#scheduler.after(remainingMs / clock.rate, this.#kClockDone, slot, generation);
      }
    }
  }

  #clock(pod: SimPod, nowMs: number): WorkClock {
    let clock = this.#clocks[pod.index];
    if (clock === undefined) {
      clock = new WorkClock(pod, nowMs);
      this.#clocks[pod.index] = clock;
    }
    return clock;
  }

  /** Request `slot` leaves its pod's list of requests in service. */
  #leave(slot: number): void {
    const req = this.#requests;
    const clock = this.#clocks[req.pod[slot] as number] as WorkClock;
    const pos = req.servicePos[slot] as number;
    const last = clock.slots[--clock.count] as number;
    clock.slots[pos] = last;
    req.servicePos[last] = pos;
    nextGeneration(req, slot);
  }
}

/** Bumps request `slot`'s completion generation (wrapping at 2^31): older events become stale. */
function nextGeneration(req: RequestTable, slot: number): number {
  const generation = ((req.serviceGen[slot] as number) + 1) | 0;
  req.serviceGen[slot] = generation;
  return generation;
}
