/**
 * One run of one scenario through one dataplane, on virtual time. The simulation owns the
 * pods (their lifecycle, workers, queues and speeds — `PodService`, `PodEpisodes`), the
 * clients (`ClientArrivals`), the scenario's timeline (scale-outs, rolling updates driven like
 * the Deployment controller, bursts, slowdowns) and what is measured (`RunMeasurement`); the
 * dataplane's router decides where each request goes. Everything random comes from
 * per-purpose streams forked from one seed, in a fixed order, so a seed reproduces a run
 * exactly — and two dataplanes run with the same seed see the same arrivals, service times,
 * pod speeds, pauses and episodes (common random numbers).
 */

import { resolveFairShareDecision } from '../../balancing/fair-share/fair-share-options.js';
import type { Endpoint } from '../../core/endpoint.js';
import { EndpointSet } from '../../core/endpoint-set.js';
import { SeededRandom } from '../../core/random.js';
import { LifetimePolicy } from '../../pool/lifetime-policy.js';
import type { DataplaneModel, RequestRouter } from '../dataplane/dataplane.js';
import { Scheduler } from '../engine/scheduler.js';
import { VirtualClock } from '../engine/virtual-clock.js';
import { isDeploymentChange, type Scenario, type ScenarioEvent, scenarioError } from '../scenario/scenario-spec.js';
import { podName } from '../scenario/scenario-text.js';
import { createSampler } from '../workload/distribution.js';
import { podSpeeds } from '../workload/speed-distribution.js';
import { ClientArrivals } from './client-arrivals.js';
import { createClients } from './client-placement.js';
import { ConnectionManager } from './connection-manager.js';
import { DeploymentController } from './deployment-controller.js';
import { SimFairShare } from './fair-share-shedding.js';
import { changesPodRates, PodEpisodes } from './pod-episodes.js';
import { PodService } from './pod-service.js';
import { CLOSED_LOOP, RequestTable } from './request-table.js';
import { timeCapMs } from './run-bounds.js';
import { RunMeasurement } from './run-measurement.js';
import type { SimClient } from './sim-client.js';
import { SimPod } from './sim-pod.js';
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
  readonly #arrivals: ClientArrivals;
  readonly #service: PodService;
  readonly #episodes: PodEpisodes;
  /** The speed of the pod created with each index. */
  readonly #speedOf: (index: number) => number;
  readonly #measure: RunMeasurement;
  readonly #podOf = new Map<Endpoint, SimPod>();
  readonly #ordinals = new Map<number, number>();
  readonly #kPodReady: number;
  readonly #kPodGone: number;
  readonly #kTimeline: number;
  readonly #kEnd: number;
  #endpointSet: EndpointSet | undefined;
  readonly #deployment: DeploymentController;
  #settledAtMs: number | undefined;
  #changeAtMs: number | undefined;
  #ended = false;
  readonly #fairShare: SimFairShare | undefined;

  constructor(init: SimulationInit) {
    const s = init.scenario;
    this.scenario = s;
    this.#onTick = init.onTick;
    this.#measure = new RunMeasurement(s.bucketMs, s.pods.count, s.server.loadWindowMs);
    this.clock = new VirtualClock(this.scheduler);
    // Streams are forked in a fixed order; add new ones at the end to keep old seeds stable.
    const root = new SeededRandom(init.seed);
    const arrivalRandom = root.fork();
    const serviceRandom = root.fork();
    const dataplane = root.fork();
    const clientLifetime = root.fork();
    const serverLifetime = root.fork();
    const sessions = root.fork();
    const balancers = root.fork();
    const requestKeys = root.fork();
    const burstRandom = root.fork();
    const addresses = root.fork();
    const discovery = root.fork();
    this.streams = { dataplane, balancers, requestKeys, discovery };
    const fairShareRandom = root.fork();
    this.#speedOf = podSpeeds(s.pods.speeds ?? [], s.pods.speedDistribution, root.fork());
    const pauseRandom = root.fork();
    const noisyRandom = root.fork();
    this.#service = new PodService({
      scheduler: this.scheduler,
      requests: this.requests,
      service: createSampler(s.pods.serviceTime),
      random: serviceRandom,
      changingRates: changesPodRates(s),
      done: (slot) => this.#complete(slot),
    });
    this.#episodes = new PodEpisodes({
      scenario: s,
      scheduler: this.scheduler,
      pods: this.pods,
      service: this.#service,
      pauseRandom,
      noisyRandom,
    });
    this.#arrivals = new ClientArrivals({
      scenario: s,
      scheduler: this.scheduler,
      clients: this.clients,
      window: this.#measure.window,
      arrivalRandom,
      burstRandom,
      send: (client, flags) => this.#sendSlot(client, flags),
      maybeFinished: () => this.#checkFinished(),
    });
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

    const sc = this.scheduler;
    this.#kPodReady = sc.register((pod) => this.#podReady(this.pods[pod] as SimPod));
    this.#kPodGone = sc.register((pod) => this.#podGone(this.pods[pod] as SimPod));
    this.#kTimeline = sc.register((index) => this.#timeline(index));
    this.#kEnd = sc.register(() => this.#end());

    this.clients.push(...createClients(s, addresses));
    const changes = (s.events ?? []).filter(isDeploymentChange).length;
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
    const clientZone = pod.zone < 0 ? -1 : (this.clients[this.requests.client[slot] as number] as SimClient).zone;
    this.#measure.delivered(now, pod, this.pods.length, clientZone);
    this.requests.arrivedMs[slot] = now;
    this.requests.arrivedInFlight[slot] = pod.inFlight;
    if (pod.busy < pod.workers) this.#service.start(pod, slot);
    else pod.enqueue(slot);
  }

  fail(slot: number): void {
    this.#measure.failed();
    const closedLoop = (this.requests.flags[slot] as number) & CLOSED_LOOP;
    const client = this.requests.client[slot] as number;
    this.requests.release(slot);
    // A closed-loop client retries after its think time (at least 100 ms: no endpoint now).
    if (closedLoop !== 0) this.#arrivals.nextClosedLoop(client, 100);
    this.#checkFinished();
  }

  probeSent(): void {
    this.#measure.probeSent(this.scheduler.now);
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
    this.#arrivals.start();
    const events = s.events ?? [];
    events.forEach((e, i) => {
      if (isDeploymentChange(e) && (this.#changeAtMs === undefined || e.atMs < this.#changeAtMs))
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
      if (this.scheduler.pending === 0 && s.measure.windowMs === undefined)
        this.#measure.window.endMs = this.scheduler.now;
      else throw scenarioError(JSON.stringify(s.name), `did not finish within ${cap} ms of simulated time`);
    }
    // A window that never opened (a finite workload done before the change settled) is empty.
    if (!Number.isFinite(this.#measure.window.startMs)) this.#measure.window.startMs = this.#measure.window.endMs;
    this.#measure.finish(this.pods);
    return {
      ...this.#measure.outcome(),
      pods: this.pods,
      settledAtMs: this.#settledAtMs ?? this.#measure.window.startMs,
      changeAtMs: this.#changeAtMs,
      connectionsOpened: this.connections.opened,
      connectionsOpenedInWindow: this.connections.openedInWindow,
      events: this.scheduler.processed,
    };
  }

  #openWindow(startMs: number): void {
    this.#measure.window.startMs = startMs;
    const w = this.scenario.measure.windowMs;
    if (w !== undefined) {
      this.#measure.window.endMs = startMs + w;
      this.scheduler.at(this.#measure.window.endMs, this.#kEnd);
    }
    this.connections.setWindow(startMs, this.#measure.window.endMs);
  }

  #end(): void {
    this.#ended = true;
    this.scheduler.stop();
  }

  #checkFinished(): void {
    if (this.scenario.measure.windowMs !== undefined || this.#ended) return;
    if (this.#arrivals.idle) {
      if (this.requests.live === 0 && !this.#deployment.changing) {
        this.#measure.window.endMs = this.scheduler.now + 1e-9;
        this.#end();
      }
    }
  }

  // --- clients ---------------------------------------------------------------------------

  #sendSlot(client: SimClient, flags: number): void {
    this.#measure.sent();
    const slot = this.requests.alloc(client.index, this.scheduler.now, flags);
    this.#router.send(client, slot);
  }

  // --- pods --------------------------------------------------------------------------------

  #complete(slot: number): void {
    const req = this.requests;
    const pod = this.pods[req.pod[slot] as number] as SimPod;
    const now = this.scheduler.now;
    pod.finishService(now, now - (req.arrivedMs[slot] as number), req.arrivedInFlight[slot] as number);
    this.#measure.completed(now, req.sentMs[slot] as number, pod);
    this.#router.done(slot);
    const closedLoop = (req.flags[slot] as number) & CLOSED_LOOP;
    const client = req.client[slot] as number;
    req.release(slot);
    if (closedLoop !== 0) this.#arrivals.nextClosedLoop(client, 0);
    const next = pod.dequeue();
    if (next >= 0) this.#service.start(pod, next);
    else if (req.live === 0) this.#checkFinished();
  }

  #createPod(initial: boolean, revision: number): SimPod {
    const s = this.scenario.pods;
    const index = this.pods.length;
    const ordinal = (this.#ordinals.get(revision) ?? 0) + 1;
    this.#ordinals.set(revision, ordinal);
    const zones = zoneCount(this.scenario);
    const zone = initial ? initialPodZone(this.scenario, index) : leastPopulatedZone(zones, this.#livePodZones());
    const pod = new SimPod({
      index,
      name: podName(this.scenario, revision, ordinal),
      addressU32: (POD_BASE + index + 10) >>> 0,
      port: s.port,
      revision,
      speed: this.#speedOf(index),
      workers: s.workers,
      createdAtMs: this.scheduler.now,
      initial,
      zone,
      ...(zone < 0 ? {} : { zoneName: zoneName(zone) }),
      loads: this.#measure.loads,
    });
    this.pods.push(pod);
    this.#episodes.podCreated(pod);
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
    if (e.type === 'burst') this.#arrivals.burstEvent(index);
    else if (e.type === 'scale') this.#deployment.scale(e.pods);
    else if (e.type === 'slowdown') this.#episodes.slowdownEvent(index);
    else this.#deployment.rollingUpdate(e.maxSurge, e.maxUnavailable);
  }

  /** Every scheduled change has finished: open the window if it waits for that. */
  #settled(): void {
    this.#settledAtMs = this.scheduler.now;
    if (this.scenario.measure.from === 'settled' && !Number.isFinite(this.#measure.window.startMs)) {
      this.#openWindow(this.scheduler.now);
    }
  }
}
