/**
 * kube-apiserver's webhook client before the round-trip fix: Go's HTTP/1.1 transport keeps
 * idle connections keyed by the request's host — the Service name — and the custom dial
 * function that resolves the Service to one random ready endpoint runs only when no idle
 * connection is left. A request takes the most recently idled connection (Go's pool is
 * LIFO); after the response the connection goes back to the pool if fewer than
 * `maxIdleConnsPerHost` are idle, else it closes. So at low concurrency one connection — one
 * pod — carries nearly everything, and bursts dial a few more at random. Connections to a
 * pod that went away close with it; lifetime limits apply as on any connection.
 */
import type { ConnectionOwner } from '../../model/connection-manager.js';
import type { SimClient } from '../../model/sim-client.js';
import type { SimPod } from '../../model/sim-pod.js';
import type { SimulationContext } from '../../model/simulation-context.js';
import type { RequestRouter } from '../dataplane.js';

export class HostKeyedPoolRouter implements RequestRouter, ConnectionOwner {
  readonly #ctx: SimulationContext;
  /** Per client, its idle connections' ids (a stack: the last idled is taken first). */
  readonly #idle: number[][];
  readonly #maxIdle: number;

  constructor(ctx: SimulationContext) {
    this.#ctx = ctx;
    this.#idle = Array.from({ length: ctx.clients.length }, (): number[] => []);
    this.#maxIdle = ctx.scenario.clients.maxIdleConnsPerHost;
    ctx.connections.setOwner(this);
  }

  start(): void {}

  send(client: SimClient, slot: number): void {
    const ctx = this.#ctx;
    const idle = this.#idle[client.index] as number[];
    let conn = -1;
    while (conn < 0 && idle.length > 0) {
      const candidate = idle.pop() as number;
      if (ctx.connections.usable(candidate)) conn = candidate;
    }
    if (conn < 0) {
      // Dial: the Service resolves to one random eligible endpoint.
      const pods = ctx.eligiblePods;
      if (pods.length === 0) {
        ctx.fail(slot);
        return;
      }
      const pod = pods[ctx.streams.dataplane.int(pods.length)] as SimPod;
      conn = ctx.connections.open(client, pod, false);
    }
    ctx.requests.conn[slot] = conn;
    ctx.connections.startRequest(conn);
    ctx.deliver(slot, ctx.pods[ctx.connections.podOf(conn)] as SimPod);
  }

  done(slot: number): void {
    const ctx = this.#ctx;
    const conn = ctx.requests.conn[slot] as number;
    ctx.connections.endRequest(conn);
    if (!ctx.connections.isOpen(conn)) return;
    const idle = this.#idle[ctx.connections.clientOf(conn)] as number[];
    if (idle.length < this.#maxIdle) idle.push(conn);
    else ctx.connections.retire(conn);
  }

  endpointsChanged(): void {}

  podGone(pod: SimPod): void {
    for (const id of this.#ctx.connections.openTo(pod)) this.#ctx.connections.abort(id);
  }

  // Closed connections are dropped from the idle stacks lazily, when popped.
  retired(): void {}
  closed(id: number): void {
    const idle = this.#idle[this.#ctx.connections.clientOf(id)] as number[];
    const i = idle.indexOf(id);
    if (i >= 0) idle.splice(i, 1);
  }
}
