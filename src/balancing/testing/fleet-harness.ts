/**
 * A small fleet for balancing tests: several `Balancer`s (client replicas, each with its own
 * load view) on one `ManualClock`, sending to pods that serve with a number of workers and a
 * service time (queueing beyond the workers), stepped in fixed time steps. Requests are
 * counted per pod per second, so tests can check shares over time. Test-only.
 */
import type { ManualClock } from '../../core/clock.js';
import type { EndpointInput } from '../../core/endpoint.js';
import { EndpointSet } from '../../core/endpoint-set.js';
import type { Random } from '../../core/random.js';
import type { Balancer } from '../balancer.js';
import type { EndpointLoad } from '../endpoint-load.js';

export interface FleetPod {
  readonly input: EndpointInput;
  /** Concurrent requests served; the rest queue (FIFO). */
  readonly workers: number;
  /** Mean service time, ms; `exponential` draws it, otherwise it is fixed. */
  readonly serviceMs: number;
  readonly exponential?: boolean;
}

interface Request {
  readonly load: EndpointLoad;
  readonly startMs: number;
  endMs: number;
}

interface PodState {
  readonly pod: FleetPod;
  readonly key: string;
  serving: Request[];
  queue: Request[];
}

export class FleetHarness {
  readonly clock: ManualClock;
  readonly balancers: readonly Balancer[];
  /** Requests that arrived at each pod, per whole second of clock time: key → counts. */
  readonly perSecond = new Map<string, number[]>();
  readonly #random: Random;
  readonly #pods = new Map<string, PodState>();
  readonly #credit: number[];

  constructor(clock: ManualClock, balancers: readonly Balancer[], random: Random) {
    this.clock = clock;
    this.balancers = balancers;
    this.#random = random;
    this.#credit = balancers.map(() => 0);
  }

  /** Publishes `pods` to every balancer (a discovery update); pods keep their queues. */
  setPods(pods: readonly FleetPod[], meta: { trafficDistribution?: string } = {}): void {
    const set = EndpointSet.from(
      pods.map((p) => p.input),
      meta,
    );
    for (const p of pods) {
      const key = set.endpoints.find((e) => e.address === p.input.address)?.key as string;
      if (!this.#pods.has(key)) this.#pods.set(key, { pod: p, key, serving: [], queue: [] });
    }
    for (const b of this.balancers) b.update(set);
  }

  /**
   * Runs until `untilMs`, each balancer sending `rate(i)` requests per second (evenly spaced),
   * in steps of `stepMs`.
   */
  run(untilMs: number, rate: (balancer: number) => number, stepMs = 5): void {
    while (this.clock.now() < untilMs) {
      const now = this.clock.now();
      this.#complete(now);
      this.balancers.forEach((b, i) => {
        this.#credit[i] = (this.#credit[i] as number) + (rate(i) * stepMs) / 1000;
        while ((this.#credit[i] as number) >= 1) {
          this.#credit[i] = (this.#credit[i] as number) - 1;
          const picked = b.picker.pick();
          if (picked.type === 'none') continue;
          this.#arrive(picked.endpoint.key, picked.load, now);
        }
      });
      this.clock.advance(stepMs);
    }
  }

  /** Requests to `key` in second `s`. */
  count(key: string, s: number): number {
    return this.perSecond.get(key)?.[s] ?? 0;
  }

  /** Requests to all pods in second `s`. */
  total(s: number): number {
    let n = 0;
    for (const counts of this.perSecond.values()) n += counts[s] ?? 0;
    return n;
  }

  #arrive(key: string, load: EndpointLoad, now: number): void {
    const state = this.#pods.get(key) as PodState;
    const second = Math.floor(now / 1000);
    let counts = this.perSecond.get(key);
    if (counts === undefined) {
      counts = [];
      this.perSecond.set(key, counts);
    }
    counts[second] = (counts[second] ?? 0) + 1;
    const request: Request = { load, startMs: load.start(), endMs: 0 };
    if (state.serving.length < state.pod.workers) this.#serve(state, request, now);
    else state.queue.push(request);
  }

  #serve(state: PodState, request: Request, now: number): void {
    const { serviceMs, exponential } = state.pod;
    const service = exponential ? -Math.log(1 - this.#random.next()) * serviceMs : serviceMs;
    request.endMs = now + service;
    state.serving.push(request);
  }

  #complete(now: number): void {
    for (const state of this.#pods.values()) {
      if (state.serving.length === 0) continue;
      const still: Request[] = [];
      for (const r of state.serving) {
        if (r.endMs <= now) r.load.end(r.startMs, true);
        else still.push(r);
      }
      state.serving = still;
      while (state.serving.length < state.pod.workers && state.queue.length > 0) {
        this.#serve(state, state.queue.shift() as Request, now);
      }
    }
  }
}
