/**
 * Fair-share shedding on simulated pods (`server.fairShare`, `--server-fair-share`): each
 * ready pod runs the production `FairShareDecider` once per jittered period, measuring its own
 * load with the production `LoadMeter`, asking `peersPerPeriod` random peers (answers are
 * instant and exact here; the real exchange adds a timeout) through the production
 * `PeerLoadTable`, and retiring the connections the decider names — the connection manager
 * then lets the router re-dial them, wherever its kube-proxy model sends them.
 */
import { FairShareDecider, nextFairSharePeriodMs } from '../../balancing/fair-share/fair-share-decider.js';
import type { ResolvedFairShareDecision } from '../../balancing/fair-share/fair-share-options.js';
import { LoadMeter } from '../../balancing/fair-share/load-meter.js';
import { PeerLoadTable } from '../../balancing/fair-share/peer-load-table.js';
import type { SeededRandom } from '../../core/random.js';
import type { Scheduler } from '../engine/scheduler.js';
import type { ConnectionManager } from './connection-manager.js';
import type { SimPod } from './sim-pod.js';

interface PodShedder {
  readonly decider: FairShareDecider;
  readonly meter: LoadMeter;
  readonly table: PeerLoadTable;
}

export class SimFairShare {
  readonly #scheduler: Scheduler;
  readonly #pods: readonly SimPod[];
  readonly #connections: ConnectionManager;
  readonly #options: ResolvedFairShareDecision;
  readonly #random: SeededRandom;
  readonly #kind: number;
  readonly #byPod = new Map<SimPod, PodShedder>();
  /** Connections retired by shedding. */
  shed = 0;

  constructor(init: {
    readonly scheduler: Scheduler;
    readonly pods: readonly SimPod[];
    readonly connections: ConnectionManager;
    readonly options: ResolvedFairShareDecision;
    readonly random: SeededRandom;
  }) {
    this.#scheduler = init.scheduler;
    this.#pods = init.pods;
    this.#connections = init.connections;
    this.#options = init.options;
    this.#random = init.random;
    this.#kind = init.scheduler.register((pod) => this.#tick(this.#pods[pod] as SimPod));
  }

  /** `pod` became ready: it starts deciding (its warm-up counts from now). */
  podReady(pod: SimPod): void {
    const now = this.#scheduler.now;
    const meter = new LoadMeter(this.#options.loadMetric, this.#options.windowMs);
    meter.sample(now, pod.totalRequests, pod.busy + pod.queued);
    this.#byPod.set(pod, {
      decider: new FairShareDecider(this.#options, now),
      meter,
      table: new PeerLoadTable(this.#options, this.#random.fork()),
    });
    this.#scheduler.after(nextFairSharePeriodMs(this.#options, this.#random), this.#kind, pod.index);
  }

  #load(pod: SimPod, state: PodShedder, now: number): number {
    return state.meter.load(now, pod.totalRequests, pod.busy + pod.queued, pod.openConnections);
  }

  #tick(pod: SimPod): void {
    const state = this.#byPod.get(pod);
    if (state === undefined) return;
    if (pod.state !== 'ready') {
      this.#byPod.delete(pod);
      return;
    }
    const now = this.#scheduler.now;
    const ownLoad = this.#load(pod, state, now);
    state.meter.sample(now, pod.totalRequests, pod.busy + pod.queued);
    const peers: string[] = [];
    const byName = new Map<string, SimPod>();
    for (const p of this.#pods) {
      if (p === pod || p.state !== 'ready') continue;
      peers.push(p.name);
      byName.set(p.name, p);
    }
    state.table.setPeers(peers);
    for (const name of state.table.pickPeers()) {
      const peer = byName.get(name) as SimPod;
      const peerState = this.#byPod.get(peer);
      if (peerState !== undefined) state.table.record(name, this.#load(peer, peerState, now), now);
    }
    const open: number[] = [];
    const loads: number[] = [];
    for (const id of this.#connections.openTo(pod)) {
      if (!this.#connections.isOpen(id)) continue;
      open.push(id);
      loads.push(state.meter.connectionLoad(this.#connections.handle(id), now));
    }
    const decision = state.decider.decide({
      nowMs: now,
      ownLoad,
      peerLoads: state.table.freshLoads(now),
      connectionLoads: loads,
    });
    if (decision.type === 'shed') {
      for (const i of decision.connections) this.#connections.retire(open[i] as number);
      this.shed += decision.connections.length;
    }
    this.#scheduler.after(nextFairSharePeriodMs(this.#options, this.#random), this.#kind, pod.index);
  }
}
