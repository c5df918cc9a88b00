/**
 * Discovery lag for a fleet of balancers. Every endpoint change publishes a numbered snapshot
 * of the Service's endpoints; each balancer receives it after its own delay, drawn from the
 * scenario's `clients.discoveryLag` distribution (watch delay, DNS TTL, file sync), and
 * installs it only if it is newer than what it has — a later change that arrives first
 * supersedes an earlier, slower one, as with a real watch. The first snapshot (the pods at
 * start) reaches every balancer at once: the fleet has been running. Changes at the same
 * instant are one snapshot (one watch event), so four pods ready together arrive together.
 */
import type { Balancer } from '../../../balancing/balancer.js';
import type { EndpointSet } from '../../../core/endpoint-set.js';
import type { SimulationContext } from '../../model/simulation-context.js';
import { createSampler, type DistributionSpec, type Sampler } from '../../workload/distribution.js';

export class DiscoveryLag {
  readonly #ctx: SimulationContext;
  readonly #balancers: readonly Balancer[];
  readonly #sampler: Sampler;
  readonly #kind: number;
  /** Snapshots not yet delivered to every balancer, by version, with deliveries pending. */
  readonly #snapshots = new Map<number, { set: EndpointSet; pending: number }>();
  /** The version each balancer has installed. */
  readonly #installed: Int32Array;
  #version = 0;
  #publishedAtMs = Number.NEGATIVE_INFINITY;

  constructor(ctx: SimulationContext, balancers: readonly Balancer[], lag: DistributionSpec) {
    this.#ctx = ctx;
    this.#balancers = balancers;
    this.#sampler = createSampler(lag);
    this.#installed = new Int32Array(balancers.length);
    this.#kind = ctx.scheduler.register((balancer, version) => this.#deliver(balancer, version));
  }

  /** A new endpoint snapshot: every balancer installs it after its own delay. */
  publish(set: EndpointSet): void {
    const now = this.#ctx.scheduler.now;
    // Changes at one instant (pods of a scale-out becoming ready together) are one update.
    const same = this.#snapshots.get(this.#version);
    if (same !== undefined && now === this.#publishedAtMs) {
      same.set = set;
      return;
    }
    this.#publishedAtMs = now;
    const version = ++this.#version;
    if (version === 1) {
      this.#balancers.forEach((b, i) => {
        b.update(set);
        this.#installed[i] = version;
      });
      return;
    }
    this.#snapshots.set(version, { set, pending: this.#balancers.length });
    const random = this.#ctx.streams.discovery;
    for (let i = 0; i < this.#balancers.length; i++) {
      this.#ctx.scheduler.after(this.#sampler.sample(random), this.#kind, i, version);
    }
  }

  #deliver(balancer: number, version: number): void {
    const snapshot = this.#snapshots.get(version);
    if (snapshot === undefined) return;
    if (version > (this.#installed[balancer] as number)) {
      (this.#balancers[balancer] as Balancer).update(snapshot.set);
      this.#installed[balancer] = version;
    }
    if (--snapshot.pending === 0) this.#snapshots.delete(version);
  }
}
