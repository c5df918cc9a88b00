/**
 * The timeline of what slows pods down: GC-like pauses (`pods.pauses`: every pod runs for a
 * drawn interval, stops serving for a drawn duration, and again), noisy-neighbour episodes
 * drawn the same way (`pods.noisyNeighbours`, serving `factor`× slower), and slowdown events
 * at given times on given pods (`events[]` of type `slowdown`). Each pod's chain starts when
 * the pod is created and stops once it is gone. Overlapping slowdowns multiply; a pod with
 * none active is back at exactly its own speed. Draws come from their own seeded streams, in
 * an order that depends only on the pods' creation times, never on the dataplane — so every
 * dataplane of a trial meets the same pauses and episodes.
 */
import type { SeededRandom } from '../../core/random.js';
import type { Scheduler } from '../engine/scheduler.js';
import type { Scenario, ScenarioEvent } from '../scenario/scenario-spec.js';
import { createSampler, type Sampler } from '../workload/distribution.js';
import type { PodService } from './pod-service.js';
import type { SimPod } from './sim-pod.js';

interface DrawnEpisodes {
  readonly interval: Sampler;
  readonly duration: Sampler;
  readonly random: SeededRandom;
}

export interface PodEpisodesInit {
  readonly scenario: Scenario;
  readonly scheduler: Scheduler;
  readonly pods: readonly SimPod[];
  readonly service: PodService;
  readonly pauseRandom: SeededRandom;
  readonly noisyRandom: SeededRandom;
}

/** Whether a scenario changes any pod's rate during a run (pauses, episodes or slowdown events). */
export function changesPodRates(s: Scenario): boolean {
  return (
    s.pods.pauses !== undefined ||
    s.pods.noisyNeighbours !== undefined ||
    (s.events ?? []).some((e) => e.type === 'slowdown')
  );
}

export class PodEpisodes {
  readonly #scenario: Scenario;
  readonly #scheduler: Scheduler;
  readonly #pods: readonly SimPod[];
  readonly #service: PodService;
  readonly #pauses: DrawnEpisodes | undefined;
  readonly #noisy: (DrawnEpisodes & { readonly factor: number }) | undefined;
  /** Per pod index: slowdown episodes active now. */
  readonly #active: number[] = [];
  readonly #kPauseStart: number;
  readonly #kPauseEnd: number;
  readonly #kNoisyStart: number;
  readonly #kNoisyEnd: number;
  readonly #kSlowdownEnd: number;

  constructor(init: PodEpisodesInit) {
    const p = init.scenario.pods;
    this.#scenario = init.scenario;
    this.#scheduler = init.scheduler;
    this.#pods = init.pods;
    this.#service = init.service;
    this.#pauses =
      p.pauses === undefined
        ? undefined
        : {
            interval: createSampler(p.pauses.interval),
            duration: createSampler(p.pauses.duration),
            random: init.pauseRandom,
          };
    this.#noisy =
      p.noisyNeighbours === undefined
        ? undefined
        : {
            interval: createSampler(p.noisyNeighbours.interval),
            duration: createSampler(p.noisyNeighbours.duration),
            random: init.noisyRandom,
            factor: p.noisyNeighbours.factor,
          };
    const sc = init.scheduler;
    this.#kPauseStart = sc.register((pod) => this.#pauseStart(this.#pod(pod)));
    this.#kPauseEnd = sc.register((pod) => this.#pauseEnd(this.#pod(pod)));
    this.#kNoisyStart = sc.register((pod) => this.#noisyStart(this.#pod(pod)));
    this.#kNoisyEnd = sc.register((pod) => this.#noisyEnd(this.#pod(pod)));
    this.#kSlowdownEnd = sc.register((event) => {
      const e = this.#event(event);
      this.#slow(this.#pod(e.pod), 1 / e.factor, false);
    });
  }

  /** `pod` was just created: its drawn pauses and episodes begin their chains. */
  podCreated(pod: SimPod): void {
    if (this.#pauses !== undefined) this.#next(this.#pauses, this.#kPauseStart, pod);
    if (this.#noisy !== undefined) this.#next(this.#noisy, this.#kNoisyStart, pod);
  }

  /** The timeline reached slowdown event `index` (`events[index]`). */
  slowdownEvent(index: number): void {
    const e = this.#event(index);
    this.#slow(this.#pod(e.pod), e.factor, true);
    this.#scheduler.after(e.durationMs, this.#kSlowdownEnd, index);
  }

  #pod(index: number): SimPod {
    return this.#pods[index] as SimPod;
  }

  #event(index: number): Extract<ScenarioEvent, { type: 'slowdown' }> {
    return (this.#scenario.events ?? [])[index] as Extract<ScenarioEvent, { type: 'slowdown' }>;
  }

  /** Schedules the next start of a drawn chain, unless the pod is gone. */
  #next(drawn: DrawnEpisodes, kind: number, pod: SimPod): void {
    if (pod.state === 'gone') return;
    this.#scheduler.after(drawn.interval.sample(drawn.random), kind, pod.index);
  }

  #pauseStart(pod: SimPod): void {
    const drawn = this.#pauses as DrawnEpisodes;
    if (pod.state === 'gone') return;
    pod.paused = true;
    pod.pauses++;
    this.#service.rateChanged(pod);
    this.#scheduler.after(drawn.duration.sample(drawn.random), this.#kPauseEnd, pod.index);
  }

  #pauseEnd(pod: SimPod): void {
    pod.paused = false;
    this.#service.rateChanged(pod);
    this.#next(this.#pauses as DrawnEpisodes, this.#kPauseStart, pod);
  }

  #noisyStart(pod: SimPod): void {
    const drawn = this.#noisy as DrawnEpisodes & { readonly factor: number };
    if (pod.state === 'gone') return;
    this.#slow(pod, drawn.factor, true);
    this.#scheduler.after(drawn.duration.sample(drawn.random), this.#kNoisyEnd, pod.index);
  }

  #noisyEnd(pod: SimPod): void {
    const drawn = this.#noisy as DrawnEpisodes & { readonly factor: number };
    this.#slow(pod, 1 / drawn.factor, false);
    this.#next(drawn, this.#kNoisyStart, pod);
  }

  /** Multiplies `pod`'s slowdown by `factor` as an episode starts (`starting`) or ends. */
  #slow(pod: SimPod, factor: number, starting: boolean): void {
    const active = (this.#active[pod.index] ?? 0) + (starting ? 1 : -1);
    this.#active[pod.index] = active;
    // Back to exactly 1 when nothing is active: no rounding drift after many episodes.
    pod.slowdown = active === 0 ? 1 : pod.slowdown * factor;
    if (starting) pod.slowdowns++;
    this.#service.rateChanged(pod);
  }
}
