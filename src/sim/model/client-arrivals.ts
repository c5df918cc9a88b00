/**
 * When the clients send: open-loop arrivals (Poisson or evenly spaced with a random phase, per
 * client), closed-loop streams (each request's end, or failure, starts the next after a think
 * time), and the scenario's bursts (extra requests spread over a moment, optionally
 * repeating). It decides only *when*; `send` hands each request to the simulation. It also
 * knows when a finite workload has nothing more to send (`idle`), which ends such a run once
 * the last response is in. Draws come from the arrival and burst streams in a fixed order, so
 * every dataplane of a trial sees the same requests at the same moments.
 */
import type { SeededRandom } from '../../core/random.js';
import type { Scheduler } from '../engine/scheduler.js';
import type { Scenario, ScenarioEvent } from '../scenario/scenario-spec.js';
import { createSampler, type Sampler } from '../workload/distribution.js';
import type { MeasuredWindow } from './pod-loads.js';
import { CLOSED_LOOP } from './request-table.js';
import type { SimClient } from './sim-client.js';

export interface ClientArrivalsInit {
  readonly scenario: Scenario;
  readonly scheduler: Scheduler;
  readonly clients: readonly SimClient[];
  readonly window: MeasuredWindow;
  readonly arrivalRandom: SeededRandom;
  readonly burstRandom: SeededRandom;
  /** Sends one request from `client` now (`flags`: `RequestTable.flags`). */
  readonly send: (client: SimClient, flags: number) => void;
  /** A finite workload may just have sent its last request. */
  readonly maybeFinished: () => void;
}

export class ClientArrivals {
  readonly #scenario: Scenario;
  readonly #scheduler: Scheduler;
  readonly #clients: readonly SimClient[];
  readonly #window: MeasuredWindow;
  readonly #arrivalRandom: SeededRandom;
  readonly #burstRandom: SeededRandom;
  readonly #send: (client: SimClient, flags: number) => void;
  readonly #maybeFinished: () => void;
  readonly #think: Sampler | undefined;
  /** Open-loop arrivals: 0 none (closed loop), 1 Poisson, 2 periodic; and the mean gap (ms). */
  readonly #openLoop: 0 | 1 | 2;
  readonly #gapMs: number;
  readonly #kArrival: number;
  readonly #kSingle: number;
  readonly #kBurst: number;
  #clientsWithRemaining = 0;
  #pendingSingles = 0;
  #pendingBursts = 0;

  constructor(init: ClientArrivalsInit) {
    this.#scenario = init.scenario;
    this.#scheduler = init.scheduler;
    this.#clients = init.clients;
    this.#window = init.window;
    this.#arrivalRandom = init.arrivalRandom;
    this.#burstRandom = init.burstRandom;
    this.#send = init.send;
    this.#maybeFinished = init.maybeFinished;
    const arrival = init.scenario.clients.arrival;
    this.#think = arrival.type === 'closed-loop' ? createSampler(arrival.thinkTime) : undefined;
    this.#openLoop = arrival.type === 'poisson' ? 1 : arrival.type === 'periodic' ? 2 : 0;
    this.#gapMs = arrival.type === 'closed-loop' ? 0 : 1000 / arrival.ratePerSecond;
    const sc = init.scheduler;
    this.#kArrival = sc.register((client, generation) => this.#arrival(client, generation));
    this.#kSingle = sc.register((client, flags) => this.#single(client, flags));
    this.#kBurst = sc.register((index, repetition) => this.#burst(index, repetition));
  }

  /** Nothing more to send: every client's count is spent and no request or burst is pending. */
  get idle(): boolean {
    return this.#clientsWithRemaining === 0 && this.#pendingSingles === 0 && this.#pendingBursts === 0;
  }

  /** Starts every client's arrivals (the clients exist by now). */
  start(): void {
    const a = this.#scenario.clients.arrival;
    if (a.count !== undefined) this.#clientsWithRemaining = this.#clients.length;
    const r = this.#arrivalRandom;
    for (const client of this.#clients) {
      if (a.type === 'poisson') {
        this.#scheduler.after((-1000 / a.ratePerSecond) * Math.log(1 - r.next()), this.#kArrival, client.index, 0);
      } else if (a.type === 'periodic') {
        this.#scheduler.after((1000 / a.ratePerSecond) * r.next(), this.#kArrival, client.index, 0);
      } else {
        for (let i = 0; i < a.concurrency; i++) this.nextClosedLoop(client.index, 0);
      }
    }
  }

  /** Schedules the next request of a closed-loop stream after a think time (at least `minMs`). */
  nextClosedLoop(clientIndex: number, minMs: number): void {
    const client = this.#clients[clientIndex] as SimClient;
    if (client.remaining <= 0 || this.#think === undefined) return;
    // Reserve the request now so concurrent streams never overshoot the count.
    client.remaining--;
    if (client.remaining <= 0 && this.#scenario.clients.arrival.count !== undefined) this.#clientsWithRemaining--;
    this.#pendingSingles++;
    this.#scheduler.after(
      Math.max(minMs, this.#think.sample(this.#arrivalRandom)),
      this.#kSingle,
      clientIndex,
      CLOSED_LOOP,
    );
  }

  /** The timeline reached burst event `index` (`events[index]`). */
  burstEvent(index: number): void {
    this.#pendingBursts++;
    this.#burst(index, 0);
  }

  #arrival(clientIndex: number, generation: number): void {
    const client = this.#clients[clientIndex] as SimClient;
    if (generation !== client.arrivalGeneration || client.remaining <= 0) return;
    // An open-loop request counts against the client's remaining requests.
    client.remaining--;
    this.#send(client, 0);
    if (client.remaining <= 0) {
      this.#clientsWithRemaining--;
      this.#maybeFinished();
      return;
    }
    const gap = this.#openLoop === 1 ? -this.#gapMs * Math.log(1 - this.#arrivalRandom.next()) : this.#gapMs;
    this.#scheduler.after(gap, this.#kArrival, clientIndex, generation);
  }

  #single(clientIndex: number, flags: number): void {
    this.#pendingSingles--;
    this.#send(this.#clients[clientIndex] as SimClient, flags);
  }

  #burst(index: number, repetition: number): void {
    this.#pendingBursts--;
    const e = (this.#scenario.events ?? [])[index] as Extract<ScenarioEvent, { type: 'burst' }>;
    const r = this.#burstRandom;
    for (const client of this.#clients) {
      for (let i = 0; i < e.requestsPerClient; i++) {
        this.#pendingSingles++;
        this.#scheduler.after(e.spreadMs * r.next(), this.#kSingle, client.index, 0);
      }
    }
    const more = e.everyMs !== undefined && (e.repeat === undefined || repetition + 1 < e.repeat);
    if (more && this.#scheduler.now + (e.everyMs as number) < this.#window.endMs) {
      this.#pendingBursts++;
      this.#scheduler.after(e.everyMs as number, this.#kBurst, index, repetition + 1);
    }
  }
}
