/**
 * The simulated Deployment (and its ReplicaSets): scale events and rolling updates, decided
 * the way the Kubernetes controllers decide them, and the notion of "settled" — every change
 * that was scheduled has started and finished (new pods ready, removed pods gone). The
 * controller only decides; the simulation creates, readies and removes pods and tells the
 * controller when a pod became ready or went away.
 *
 * Rolling update (the Deployment controller's reconciliation, repeated on every pod event):
 * scale the new ReplicaSet up while pods ≤ replicas + maxSurge, scale the old one down
 * (unready pods first, then the oldest) while at least replicas − maxUnavailable pods stay
 * available. Scale-down removes unready pods first, then the newest (the ReplicaSet's order).
 */
import { resolveIntOrPercent } from '../scenario/scenario-spec.js';
import type { SimPod } from './sim-pod.js';

export interface DeploymentHooks {
  /** Every pod so far, in creation order. */
  readonly pods: readonly SimPod[];
  /** Creates a pod of `revision`; it becomes ready after the scenario's delay. */
  createPod(revision: number): SimPod;
  /** Removes `pod` from the endpoints; it goes away after the drain time. */
  terminate(pod: SimPod): void;
  /** The last pending change has finished. */
  settled(): void;
}

interface ScaleChange {
  readonly waitingReady: Set<SimPod>;
  readonly waitingGone: Set<SimPod>;
}

interface Rollout {
  readonly revision: number;
  readonly surge: number;
  readonly unavailable: number;
  readonly oldLeaving: Set<SimPod>;
}

export class DeploymentController {
  readonly #hooks: DeploymentHooks;
  #replicas: number;
  #revision = 1;
  /** Change events scheduled but not started yet. */
  #scheduled: number;
  readonly #scales = new Set<ScaleChange>();
  #rollout: Rollout | undefined;

  /** `scheduledChanges`: how many scale / rolling-update events the timeline will start. */
  constructor(replicas: number, scheduledChanges: number, hooks: DeploymentHooks) {
    this.#replicas = replicas;
    this.#scheduled = scheduledChanges;
    this.#hooks = hooks;
  }

  /** The revision new pods get. */
  get revision(): number {
    return this.#revision;
  }

  /** A change is scheduled or in progress. */
  get changing(): boolean {
    return this.#scheduled > 0 || this.#scales.size > 0 || this.#rollout !== undefined;
  }

  /** Sets the replica count. */
  scale(replicas: number): void {
    this.#scheduled--;
    this.#replicas = replicas;
    const change: ScaleChange = { waitingReady: new Set(), waitingGone: new Set() };
    const live = this.#live();
    for (let i = live.length; i < replicas; i++) change.waitingReady.add(this.#hooks.createPod(this.#revision));
    if (live.length > replicas) {
      const victims = [...live].sort((a, b) => {
        const ra = a.state === 'ready' ? 1 : 0;
        const rb = b.state === 'ready' ? 1 : 0;
        return ra - rb || b.createdAtMs - a.createdAtMs || b.index - a.index;
      });
      for (const pod of victims.slice(0, live.length - replicas)) {
        change.waitingGone.add(pod);
        this.#hooks.terminate(pod);
      }
    }
    this.#scales.add(change);
    this.#finishScale(change);
  }

  /** Replaces every pod with a new revision. */
  rollingUpdate(maxSurge: number | string, maxUnavailable: number | string): void {
    this.#scheduled--;
    this.#revision++;
    const surge = resolveIntOrPercent(maxSurge, this.#replicas, true);
    const unavailable = resolveIntOrPercent(maxUnavailable, this.#replicas, false);
    // As the Deployment controller: when both resolve to 0, maxUnavailable becomes 1.
    this.#rollout = {
      revision: this.#revision,
      surge,
      unavailable: surge === 0 && unavailable === 0 ? 1 : unavailable,
      oldLeaving: new Set(),
    };
    this.#reconcile();
  }

  podReady(pod: SimPod): void {
    for (const change of this.#scales) {
      change.waitingReady.delete(pod);
      this.#finishScale(change);
    }
    this.#reconcile();
  }

  podGone(pod: SimPod): void {
    for (const change of this.#scales) {
      change.waitingGone.delete(pod);
      this.#finishScale(change);
    }
    this.#rollout?.oldLeaving.delete(pod);
    this.#reconcile();
  }

  /** Pods that count as replicas now (not terminating, not gone). */
  #live(): SimPod[] {
    return this.#hooks.pods.filter((p) => p.state === 'starting' || p.state === 'ready');
  }

  #finishScale(change: ScaleChange): void {
    if (change.waitingReady.size > 0 || change.waitingGone.size > 0 || !this.#scales.has(change)) return;
    this.#scales.delete(change);
    this.#maybeSettled();
  }

  #maybeSettled(): void {
    if (!this.changing) this.#hooks.settled();
  }

  #reconcile(): void {
    const r = this.#rollout;
    if (r === undefined) return;
    const replicas = this.#replicas;
    for (let changed = true; changed; ) {
      changed = false;
      const live = this.#live();
      const old = live.filter((p) => p.revision !== r.revision);
      const fresh = live.filter((p) => p.revision === r.revision);
      if (old.length + fresh.length < replicas + r.surge && fresh.length < replicas) {
        this.#hooks.createPod(r.revision);
        changed = true;
        continue;
      }
      const available = live.filter((p) => p.state === 'ready').length;
      const victim = old.find((p) => p.state !== 'ready') ?? old[0];
      if (victim !== undefined && available - (victim.state === 'ready' ? 1 : 0) >= replicas - r.unavailable) {
        r.oldLeaving.add(victim);
        this.#hooks.terminate(victim);
        changed = true;
      }
    }
    const live = this.#live();
    const done =
      live.length >= replicas &&
      live.every((p) => p.revision === r.revision && p.state === 'ready') &&
      r.oldLeaving.size === 0;
    if (done) {
      this.#rollout = undefined;
      this.#maybeSettled();
    }
  }
}
