/**
 * evenlb in the simulator: the production `Balancer` with a registered policy, on the virtual
 * clock, fed the same signals as in a real client — `EndpointLoad.start()` when a request is
 * sent and `end()` when its response arrives, so in-flight counts and the peak-EWMA latency
 * follow the simulated pods. One balancer per client (each process runs its own
 * BalancedAgent) or one shared by all clients (a proxy replica), as the scenario says. The
 * pick context is reused per client, so a pick allocates nothing. Slow start, the herding
 * guard and zone routing come from the scenario's `clients` (a client's zone from
 * `clients.zones`; zone routing needs per-client balancers).
 */
import { Balancer } from '../../../balancing/balancer.js';
import type { PickContext } from '../../../balancing/picker.js';
import type { SimClient } from '../../model/sim-client.js';
import type { SimPod } from '../../model/sim-pod.js';
import type { SimulationContext } from '../../model/simulation-context.js';
import type { RequestPicker } from '../per-request-router.js';

export class BalancerPicker implements RequestPicker {
  readonly #ctx: SimulationContext;
  readonly #balancers: Balancer[] = [];
  readonly #pickContexts: PickContext[];
  readonly #shared: boolean;
  /** Draw a fresh random key per request (hash policies keyed by request); load policies ignore keys. */
  readonly #requestKeys: boolean;

  constructor(ctx: SimulationContext, policy: string, kind: 'load' | 'hash') {
    this.#ctx = ctx;
    // A hash policy's pick depends only on the request key and the endpoint set (it reads no
    // load signal and draws no random number when given a key), so every client's balancer
    // would build the same table: one shared balancer picks identically at 1/N of the cost.
    this.#shared = ctx.scenario.clients.balancerScope === 'shared' || kind === 'hash';
    this.#requestKeys = kind === 'hash' && ctx.scenario.clients.hashKey === 'request';
    const count = this.#shared ? 1 : ctx.clients.length;
    const c = ctx.scenario.clients;
    const zones = c.zones ?? [];
    for (let i = 0; i < count; i++) {
      const zone = zones.length === 0 || this.#shared ? undefined : zones[i % zones.length];
      this.#balancers.push(
        new Balancer({
          policy,
          clock: ctx.clock,
          random: ctx.streams.balancers.fork(),
          slowStart: { windowMs: c.slowStartMs },
          ...(c.herdingGuard ? {} : { herdingGuard: false as const }),
          zoneRouting: {
            mode: c.zoneRouting,
            ...(zone === undefined ? {} : { zone }),
            ...(c.zoneLoadBand === undefined ? {} : { loadBand: c.zoneLoadBand }),
          },
        }),
      );
    }
    this.#pickContexts = ctx.clients.map((c) => ({ hash: c.addressHash }));
  }

  update(): void {
    const set = this.#ctx.endpointSet();
    for (const b of this.#balancers) b.update(set);
  }

  pick(client: SimClient, slot: number): SimPod | undefined {
    const balancer = this.#balancers[this.#shared ? 0 : client.index] as Balancer;
    const context = this.#pickContexts[client.index] as PickContext;
    if (this.#requestKeys) context.hash = (this.#ctx.streams.requestKeys.next() * 4294967296) >>> 0;
    const picked = balancer.picker.pick(context);
    if (picked.type === 'none') return undefined;
    const requests = this.#ctx.requests;
    requests.load[slot] = picked.load;
    requests.loadStartMs[slot] = picked.load.start();
    return this.#ctx.podOf(picked.endpoint);
  }

  done(slot: number): void {
    const requests = this.#ctx.requests;
    requests.load[slot]?.end(requests.loadStartMs[slot] as number, true);
  }
}
