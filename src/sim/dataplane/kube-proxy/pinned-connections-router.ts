/**
 * Requests over long-lived connections placed by kube-proxy. Each client keeps its share of
 * the scenario's connections open; kube-proxy's scheduler picks the pod when a connection is
 * dialled, and every request on it goes there (conntrack pins the flow). Requests take the
 * client's usable connections in turn. A connection retired by the client's or the server's
 * lifetime policy, ended as a session, or closed because its pod went away is replaced by a
 * new dial after the reconnect delay — the only moment placement can change.
 */
import type { ConnectionOwner } from '../../model/connection-manager.js';
import type { SimClient } from '../../model/sim-client.js';
import type { SimPod } from '../../model/sim-pod.js';
import type { SimulationContext } from '../../model/simulation-context.js';
import { createSampler, type Sampler } from '../../workload/distribution.js';
import type { RequestRouter } from '../dataplane.js';
import type { ConnectionScheduler } from './connection-scheduler.js';

/** Retry delay when no endpoint is eligible, ms. */
const NO_ENDPOINT_RETRY_MS = 1000;

export class PinnedConnectionsRouter implements RequestRouter, ConnectionOwner {
  readonly #ctx: SimulationContext;
  readonly #scheduler: ConnectionScheduler;
  readonly #reconnectDelay: Sampler;
  /** Per client, the ids of its connections that take requests. */
  readonly #usable: number[][];
  readonly #next: Int32Array;
  readonly #pending: number[][];
  readonly #dialKind: number;

  constructor(ctx: SimulationContext, scheduler: ConnectionScheduler) {
    this.#ctx = ctx;
    this.#scheduler = scheduler;
    this.#reconnectDelay = createSampler(ctx.scenario.clients.reconnectDelay);
    const n = ctx.clients.length;
    this.#usable = Array.from({ length: n }, (): number[] => []);
    this.#pending = Array.from({ length: n }, () => []);
    this.#next = new Int32Array(n);
    this.#dialKind = ctx.scheduler.register((client) => this.#dial(ctx.clients[client] as SimClient, false));
    ctx.connections.setOwner(this);
  }

  start(): void {
    for (const client of this.#ctx.clients) for (let i = 0; i < client.connectionTarget; i++) this.#dial(client, true);
  }

  send(client: SimClient, slot: number): void {
    const id = this.#choose(client);
    if (id < 0) (this.#pending[client.index] as number[]).push(slot);
    else this.#use(id, slot);
  }

  done(slot: number): void {
    const ctx = this.#ctx;
    ctx.connections.endRequest(ctx.requests.conn[slot] as number);
  }

  endpointsChanged(): void {
    this.#scheduler.update(this.#ctx.eligiblePods);
  }

  podGone(pod: SimPod): void {
    for (const id of this.#ctx.connections.openTo(pod)) this.#ctx.connections.abort(id);
  }

  retired(id: number): void {
    const client = this.#ctx.connections.clientOf(id);
    const list = this.#usable[client] as number[];
    const i = list.indexOf(id);
    if (i >= 0) {
      list[i] = list[list.length - 1] as number;
      list.pop();
    }
    const delay = this.#reconnectDelay.sample(this.#ctx.streams.dataplane);
    if (delay <= 0) this.#dial(this.#ctx.clients[client] as SimClient, false);
    else this.#ctx.scheduler.after(delay, this.#dialKind, client);
  }

  closed(id: number): void {
    const ctx = this.#ctx;
    this.#scheduler.closed(
      ctx.clients[ctx.connections.clientOf(id)] as SimClient,
      ctx.pods[ctx.connections.podOf(id)] as SimPod,
    );
  }

  #dial(client: SimClient, staggered: boolean): void {
    const pod = this.#scheduler.pick(client);
    if (pod === undefined) {
      this.#ctx.scheduler.after(NO_ENDPOINT_RETRY_MS, this.#dialKind, client.index);
      return;
    }
    const id = this.#ctx.connections.open(client, pod, staggered);
    this.#scheduler.opened(client, pod);
    (this.#usable[client.index] as number[]).push(id);
    const pending = this.#pending[client.index] as number[];
    while (pending.length > 0) {
      const next = this.#choose(client);
      if (next < 0) break;
      this.#use(next, pending.shift() as number);
    }
  }

  /** The id of the client's next usable connection in turn, or -1. */
  #choose(client: SimClient): number {
    const list = this.#usable[client.index] as number[];
    const connections = this.#ctx.connections;
    while (list.length > 0) {
      const at = this.#next[client.index] as number;
      const i = at < list.length ? at : 0;
      this.#next[client.index] = i + 1;
      const id = list[i] as number;
      if (connections.usable(id)) return id;
    }
    return -1;
  }

  #use(id: number, slot: number): void {
    const ctx = this.#ctx;
    ctx.requests.conn[slot] = id;
    ctx.connections.startRequest(id);
    ctx.deliver(slot, ctx.pods[ctx.connections.podOf(id)] as SimPod);
  }
}
