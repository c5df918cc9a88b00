/**
 * One run of one scenario through one dataplane, on virtual time. The simulation owns the
 * pods (their lifecycle, workers and queues), the clients (open- or closed-loop request
 * sources), the scenario's timeline (scale-outs, rolling updates driven like the Deployment
 * controller, bursts) and the measurement window; the dataplane's router decides where each
 * request goes. Everything random comes from per-purpose streams forked from one seed, in a
 * fixed order, so a seed reproduces a run exactly — and two dataplanes run with the same
 * seed see the same arrivals and service times (common random numbers).
 */

import { resolveFairShareDecision } from '../../balancing/fair-share/fair-share-options.js';
import type { Endpoint } from '../../core/endpoint.js';
import { EndpointSet } from '../../core/endpoint-set.js';
import { SeededRandom } from '../../core/random.js';
import { LifetimePolicy } from '../../pool/lifetime-policy.js';
import type { DataplaneModel, RequestRouter } from '../dataplane/dataplane.js';
import { Scheduler } from '../engine/scheduler.js';
import { VirtualClock } from '../engine/virtual-clock.js';
import { LatencyHistogram } from '../metrics/latency-histogram.js';
import { PodLatencies } from '../metrics/pod-latencies.js';
import { type Scenario, type ScenarioEvent, scenarioError } from '../scenario/scenario-spec.js';
import { createSampler, type Sampler } from '../workload/distribution.js';
import { createClients } from './client-placement.js';
import { ConnectionManager } from './connection-manager.js';
import { DeploymentController } from './deployment-controller.js';
import { SimFairShare } from './fair-share-shedding.js';
import { PodSeries } from './pod-series.js';
import { CLOSED_LOOP, RequestTable } from './request-table.js';
import { timeCapMs } from './run-bounds.js';
import type { SimClient } from './sim-client.js';
import { POD_HISTOGRAM_GROWTH, SimPod } from './sim-pod.js';
import type { SimulationContext, SimulationStreams } from './simulation-context.js';
import type { SimulationOutcome } from './simulation-outcome.js';
import { initialPodZone, leastPopulatedZone, zoneCount, zoneName } from './zones.js';

export interface SimulationInit {
  readonly scenario: Scenario;
  readonly dataplane: DataplaneModel;
  readonly seed: number;
  /** Called every few thousand events with the virtual time and the events handled so far (progress bars). */
  readonly onTick?: (nowMs: number, events: number) => void;
}

/** Base address of pods: 10.64.0.0. */
const POD_BASE = (10 << 24) | (64 << 16);

export class Simulation implements SimulationContext {
  readonly scenario: Scenario;
  readonly scheduler = new Scheduler();
  readonly clock: VirtualClock;
  readonly requests = new RequestTable();
  readonly pods: SimPod[] = [];
  readonly clients: SimClient[] = [];
  readonly connections: ConnectionManager;
  readonly streams: SimulationStreams;
  eligiblePods: readonly SimPod[] = [];

  readonly #router: RequestRouter;
  readonly #onTick: ((nowMs: number, events: number) => void) | undefined;
  readonly #arrivalRandom: SeededRandom;
  readonly #serviceRandom: SeededRandom;
  readonly #burstRandom: SeededRandom;
  readonly #service: Sampler;
  readonly #think: Sampler | undefined;
  /** Open-loop arrivals: 0 none (closed loop), 1 Poisson, 2 periodic; and the mean gap (ms). */
  readonly #openLoop: 0 | 1 | 2;
  readonly #gapMs: number;
  readonly #latency = new LatencyHistogram();
  readonly #podLatencies: PodLatencies;
  readonly #series: PodSeries;
  readonly #podOf = new Map<Endpoint, SimPod>();
  readonly #ordinals = new Map<number, number>();
  readonly #ordinalWidth: number;
  readonly #kArrival: number;
  readonly #kSingle: number;
  readonly #kComplete: number;
  readonly #kPodReady: number;
  readonly #kPodGone: number;
  readonly #kTimeline: number;
  readonly #kBurst: number;
  readonly #kEnd: number;
  #endpointSet: EndpointSet | undefined;
  readonly #deployment: DeploymentController;
  #windowStartMs = Number.POSITIVE_INFINITY;
  #windowEndMs = Number.POSITIVE_INFINITY;
  #settledAtMs: number | undefined;
  #changeAtMs: number | undefined;
  #sent = 0;
  #failed = 0;
  #windowRequests = 0;
  #windowToRemoved = 0;
  #windowCrossZone = 0;
  #clientsWithRemaining = 0;
  #pendingSingles = 0;
  #pendingBursts = 0;
  #ended = false;
  readonly #fairShare: SimFairShare | undefined;

  constructor(init: SimulationInit) {
    const s = init.scenario;
    this.scenario = s;
    this.#onTick = init.onTick;
    this.#series = new PodSeries(s.bucketMs);
    this.#podLatencies = new PodLatencies(POD_HISTOGRAM_GROWTH, s.pods.count);
    this.clock = new VirtualClock(this.scheduler);
    // Streams are forked in a fixed order; add new ones at the end to keep old seeds stable.
    const root = new SeededRandom(init.seed);
    this.#arrivalRandom = root.fork();
    this.#serviceRandom = root.fork();
    const dataplane = root.fork();
    const clientLifetime = root.fork();
    const serverLifetime = root.fork();
    const sessions = root.fork();
    const balancers = root.fork();
    const requestKeys = root.fork();
    this.#burstRandom = root.fork();
    const addresses = root.fork();
    const discovery = root.fork();
    this.streams = { dataplane, balancers, requestKeys, discovery };
    const fairShareRandom = root.fork();
    this.#service = createSampler(s.pods.serviceTime);
    const arrival = s.clients.arrival;
    this.#think = arrival.type === 'closed-loop' ? createSampler(arrival.thinkTime) : undefined;
    this.#openLoop = arrival.type === 'poisson' ? 1 : arrival.type === 'periodic' ? 2 : 0;
    this.#gapMs = arrival.type === 'closed-loop' ? 0 : 1000 / arrival.ratePerSecond;
    this.connections = new ConnectionManager({
      scheduler: this.scheduler,
      pods: this.pods,
      clientPolicy: new LifetimePolicy(s.clients.lifetime, clientLifetime, 'scenario clients.lifetime'),
      serverPolicy: new LifetimePolicy(s.server.lifetime, serverLifetime, 'scenario server.lifetime'),
      sessions: s.clients.connectionLifetime === undefined ? undefined : createSampler(s.clients.connectionLifetime),
      random: sessions,
    });
    this.#fairShare =
      s.server.fairShare === undefined
        ? undefined
        : new SimFairShare({
            scheduler: this.scheduler,
            pods: this.pods,
            connections: this.connections,
            options: resolveFairShareDecision(s.server.fairShare),
            random: fairShareRandom,
          });
    let maxPods = s.pods.count;
    for (const e of s.events ?? []) if (e.type === 'scale') maxPods = Math.max(maxPods, e.pods);
    this.#ordinalWidth = Math.max(2, String(maxPods).length);

    const sc = this.scheduler;
    this.#kArrival = sc.register((client, generation) => this.#arrival(client, generation));
    this.#kSingle = sc.register((client, flags) => this.#single(client, flags));
    this.#kComplete = sc.register((slot) => this.#complete(slot));
    this.#kPodReady = sc.register((pod) => this.#podReady(this.pods[pod] as SimPod));
    this.#kPodGone = sc.register((pod) => this.#podGone(this.pods[pod] as SimPod));
    this.#kTimeline = sc.register((index) => this.#timeline(index));
    this.#kBurst = sc.register((index, repetition) => this.#burst(index, repetition));
    this.#kEnd = sc.register(() => this.#end());

    this.clients.push(...createClients(s, addresses));
    if (s.clients.arrival.count !== undefined) this.#clientsWithRemaining = this.clients.length;
    const changes = (s.events ?? []).filter((e) => e.type !== 'burst').length;
    this.#deployment = new DeploymentController(s.pods.count, changes, {
      pods: this.pods,
      createPod: (revision) => this.#createPod(false, revision),
      terminate: (pod) => this.#terminate(pod),
      settled: () => this.#settled(),
    });
    this.#router = init.dataplane.createRouter(this);
  }

  // --- SimulationContext -------------------------------------------------------------------

  endpointSet(): EndpointSet {
    if (this.#endpointSet === undefined) {
      const list: Endpoint[] = [];
      for (const pod of this.pods) {
        const e = pod.endpoint;
        if (e !== undefined) list.push(e);
      }
      this.#endpointSet = new EndpointSet(list);
    }
    return this.#endpointSet;
  }

  podOf(endpoint: Endpoint): SimPod | undefined {
    return this.#podOf.get(endpoint);
  }

  deliver(slot: number, pod: SimPod): void {
    const now = this.scheduler.now;
    this.requests.pod[slot] = pod.index;
    this.#series.count(now, pod.index, this.pods.length);
    pod.totalRequests++;
    if (now >= this.#windowStartMs && now < this.#windowEndMs) {
      pod.windowRequests++;
      this.#windowRequests++;
      if (pod.state !== 'ready') this.#windowToRemoved++;
      if (pod.zone >= 0 && (this.clients[this.requests.client[slot] as number] as SimClient).zone !== pod.zone) {
        this.#windowCrossZone++;
      }
    }
    if (pod.busy < pod.workers) this.#serve(pod, slot);
    else pod.enqueue(slot);
  }

  fail(slot: number): void {
    this.#failed++;
    const closedLoop = (this.requests.flags[slot] as number) & CLOSED_LOOP;
    const client = this.requests.client[slot] as number;
    this.requests.release(slot);
    // A closed-loop client retries after its think time (at least 100 ms: no endpoint now).
    if (closedLoop !== 0) this.#nextClosedLoop(client, 100);
    this.#checkFinished();
  }

  // --- running -----------------------------------------------------------------------------

  /** Runs the scenario to the end of its measurement window; returns what it measured. */
  run(): SimulationOutcome {
    const s = this.scenario;
    for (let i = 0; i < s.pods.count; i++) {
      const pod = this.#createPod(true, 1);
      pod.state = 'ready';
      pod.readyAtMs = 0;
      this.#fairShare?.podReady(pod);
    }
    this.#recomputeEligible();
    this.#router.start();
    this.#startArrivals();
    const events = s.events ?? [];
    events.forEach((e, i) => {
      if (e.type !== 'burst' && (this.#changeAtMs === undefined || e.atMs < this.#changeAtMs))
        this.#changeAtMs = e.atMs;
      this.scheduler.at(e.atMs, this.#kTimeline, i);
    });
    const from = s.measure.from;
    const changing = this.#deployment.changing;
    if (typeof from === 'number') this.#openWindow(from);
    else if (from === 'start' || !changing) this.#openWindow(0);
    if (!changing) this.#settledAtMs = 0;

    const cap = timeCapMs(s);
    const tick =
      this.#onTick === undefined ? undefined : () => this.#onTick?.(this.scheduler.now, this.scheduler.processed);
    this.scheduler.runUntil(cap, tick);
    if (!this.#ended) {
      if (this.scheduler.pending === 0 && s.measure.windowMs === undefined) this.#windowEndMs = this.scheduler.now;
      else throw scenarioError(JSON.stringify(s.name), `did not finish within ${cap} ms of simulated time`);
    }
    // A window that never opened (a finite workload done before the change settled) is empty.
    if (!Number.isFinite(this.#windowStartMs)) this.#windowStartMs = this.#windowEndMs;
    this.#series.copyTo(this.pods);
    for (const pod of this.pods) pod.latency = this.#podLatencies.histogram(pod.index);
    return {
      pods: this.pods,
      windowStartMs: this.#windowStartMs,
      windowEndMs: this.#windowEndMs,
      settledAtMs: this.#settledAtMs ?? this.#windowStartMs,
      changeAtMs: this.#changeAtMs,
      bucketMs: this.#series.bucketMs,
      latency: this.#latency,
      requestsSent: this.#sent,
      requestsFailed: this.#failed,
      windowRequests: this.#windowRequests,
      windowRequestsToRemovedPods: this.#windowToRemoved,
      windowRequestsCrossZone: this.#windowCrossZone,
      connectionsOpened: this.connections.opened,
      connectionsOpenedInWindow: this.connections.openedInWindow,
      events: this.scheduler.processed,
    };
  }

  #openWindow(startMs: number): void {
    this.#windowStartMs = startMs;
    const w = this.scenario.measure.windowMs;
    if (w !== undefined) {
      this.#windowEndMs = startMs + w;
      this.scheduler.at(this.#windowEndMs, this.#kEnd);
    }
    this.connections.setWindow(startMs, this.#windowEndMs);
  }

  #end(): void {
    this.#ended = true;
    this.scheduler.stop();
  }

  #checkFinished(): void {
    if (this.scenario.measure.windowMs !== undefined || this.#ended) return;
    if (this.#clientsWithRemaining === 0 && this.#pendingSingles === 0 && this.#pendingBursts === 0) {
      if (this.requests.live === 0 && !this.#deployment.changing) {
        this.#windowEndMs = this.scheduler.now + 1e-9;
        this.#end();
      }
    }
  }

  // --- clients and arrivals ----------------------------------------------------------------

  #startArrivals(): void {
    const a = this.scenario.clients.arrival;
    const r = this.#arrivalRandom;
    for (const client of this.clients) {
      if (a.type === 'poisson') {
        this.scheduler.after((-1000 / a.ratePerSecond) * Math.log(1 - r.next()), this.#kArrival, client.index, 0);
      } else if (a.type === 'periodic') {
        this.scheduler.after((1000 / a.ratePerSecond) * r.next(), this.#kArrival, client.index, 0);
      } else {
        for (let i = 0; i < a.concurrency; i++) this.#nextClosedLoop(client.index, 0);
      }
    }
  }

  #arrival(clientIndex: number, generation: number): void {
    const client = this.clients[clientIndex] as SimClient;
    if (generation !== client.arrivalGeneration || client.remaining <= 0) return;
    this.#send(client, 0);
    if (client.remaining <= 0) {
      this.#clientsWithRemaining--;
      this.#checkFinished();
      return;
    }
    const gap = this.#openLoop === 1 ? -this.#gapMs * Math.log(1 - this.#arrivalRandom.next()) : this.#gapMs;
    this.scheduler.after(gap, this.#kArrival, clientIndex, generation);
  }

  /** Schedules the next request of a closed-loop stream after a think time (at least `minMs`). */
  #nextClosedLoop(clientIndex: number, minMs: number): void {
    const client = this.clients[clientIndex] as SimClient;
    if (client.remaining <= 0 || this.#think === undefined) return;
    // Reserve the request now so concurrent streams never overshoot the count.
    client.remaining--;
    if (client.remaining <= 0 && this.scenario.clients.arrival.count !== undefined) this.#clientsWithRemaining--;
    this.#pendingSingles++;
    this.scheduler.after(
      Math.max(minMs, this.#think.sample(this.#arrivalRandom)),
      this.#kSingle,
      clientIndex,
      CLOSED_LOOP,
    );
  }

  #single(clientIndex: number, flags: number): void {
    this.#pendingSingles--;
    const client = this.clients[clientIndex] as SimClient;
    this.#sendSlot(client, flags);
  }

  /** An open-loop request: counts against the client's remaining requests. */
  #send(client: SimClient, flags: number): void {
    client.remaining--;
    this.#sendSlot(client, flags);
  }

  #sendSlot(client: SimClient, flags: number): void {
    this.#sent++;
    const slot = this.requests.alloc(client.index, this.scheduler.now, flags);
    this.#router.send(client, slot);
  }

  #burst(index: number, repetition: number): void {
    this.#pendingBursts--;
    const e = (this.scenario.events ?? [])[index] as Extract<ScenarioEvent, { type: 'burst' }>;
    const r = this.#burstRandom;
    for (const client of this.clients) {
      for (let i = 0; i < e.requestsPerClient; i++) {
        this.#pendingSingles++;
        this.scheduler.after(e.spreadMs * r.next(), this.#kSingle, client.index, 0);
      }
    }
    const more = e.everyMs !== undefined && (e.repeat === undefined || repetition + 1 < e.repeat);
    if (more && this.scheduler.now + (e.everyMs as number) < this.#windowEndMs) {
      this.#pendingBursts++;
      this.scheduler.after(e.everyMs as number, this.#kBurst, index, repetition + 1);
    }
  }

  // --- pods --------------------------------------------------------------------------------

  #serve(pod: SimPod, slot: number): void {
    pod.busy++;
    this.scheduler.after(this.#service.sample(this.#serviceRandom) / pod.speed, this.#kComplete, slot);
  }

  #complete(slot: number): void {
    const req = this.requests;
    const pod = this.pods[req.pod[slot] as number] as SimPod;
    pod.busy--;
    const sent = req.sentMs[slot] as number;
    if (sent >= this.#windowStartMs && sent < this.#windowEndMs) {
      const ms = this.scheduler.now - sent;
      const logScaled = Math.log(ms / LatencyHistogram.MIN_MS);
      this.#latency.recordWithLog(ms, logScaled);
      this.#podLatencies.record(pod.index, ms, logScaled);
    }
    this.#router.done(slot);
    const closedLoop = (req.flags[slot] as number) & CLOSED_LOOP;
    const client = req.client[slot] as number;
    req.release(slot);
    if (closedLoop !== 0) this.#nextClosedLoop(client, 0);
    const next = pod.dequeue();
    if (next >= 0) this.#serve(pod, next);
    else if (req.live === 0) this.#checkFinished();
  }

  #createPod(initial: boolean, revision: number): SimPod {
    const s = this.scenario.pods;
    const index = this.pods.length;
    const ordinal = (this.#ordinals.get(revision) ?? 0) + 1;
    this.#ordinals.set(revision, ordinal);
    const speeds = s.speeds ?? [];
    const zones = zoneCount(this.scenario);
    const zone = initial ? initialPodZone(this.scenario, index) : leastPopulatedZone(zones, this.#livePodZones());
    const pod = new SimPod({
      index,
      name: `v${revision}-${String(ordinal).padStart(this.#ordinalWidth, '0')}`,
      addressU32: (POD_BASE + index + 10) >>> 0,
      port: s.port,
      revision,
      speed: speeds.length === 0 ? 1 : (speeds[index % speeds.length] as number),
      workers: s.workers,
      createdAtMs: this.scheduler.now,
      initial,
      zone,
      ...(zone < 0 ? {} : { zoneName: zoneName(zone) }),
    });
    this.pods.push(pod);
    for (const e of pod.endpointVariants) this.#podOf.set(e, pod);
    if (!initial) {
      this.#endpointSet = undefined;
      this.scheduler.after(s.readyDelayMs, this.#kPodReady, index);
    }
    return pod;
  }

  *#livePodZones(): Generator<number> {
    for (const p of this.pods) if (p.state !== 'gone' && p.state !== 'terminating') yield p.zone;
  }

  #podReady(pod: SimPod): void {
    if (pod.state !== 'starting') return;
    pod.state = 'ready';
    pod.readyAtMs = this.scheduler.now;
    this.#recomputeEligible();
    this.#fairShare?.podReady(pod);
    this.#deployment.podReady(pod);
  }

  /** Removes `pod` from the endpoints; it closes its connections after the drain time. */
  #terminate(pod: SimPod): void {
    if (pod.state === 'terminating' || pod.state === 'gone') return;
    pod.state = 'terminating';
    pod.removedAtMs = this.scheduler.now;
    this.#recomputeEligible();
    this.scheduler.after(this.scenario.server.terminationDrainMs, this.#kPodGone, pod.index);
  }

  #podGone(pod: SimPod): void {
    pod.state = 'gone';
    this.#recomputeEligible();
    this.#router.podGone(pod);
    this.#deployment.podGone(pod);
  }

  #recomputeEligible(): void {
    const ready = this.pods.filter((p) => p.state === 'ready');
    const eligible = ready.length > 0 ? ready : this.pods.filter((p) => p.state === 'terminating');
    eligible.sort((a, b) => a.addressU32 - b.addressU32);
    this.eligiblePods = eligible;
    this.#endpointSet = undefined;
    this.#router.endpointsChanged();
  }

  // --- timeline: scale-outs, rolling updates, bursts -------------------------------------------

  #timeline(index: number): void {
    const e = (this.scenario.events ?? [])[index] as ScenarioEvent;
    if (e.type === 'burst') {
      this.#pendingBursts++;
      this.#burst(index, 0);
    } else if (e.type === 'scale') this.#deployment.scale(e.pods);
    else this.#deployment.rollingUpdate(e.maxSurge, e.maxUnavailable);
  }

  /** Every scheduled change has finished: open the window if it waits for that. */
  #settled(): void {
    this.#settledAtMs = this.scheduler.now;
    if (this.scenario.measure.from === 'settled' && !Number.isFinite(this.#windowStartMs)) {
      this.#openWindow(this.scheduler.now);
    }
  }
}
