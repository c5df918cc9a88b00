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
import type { SimConnection } from '../../model/sim-connection.js';
import type { SimPod } from '../../model/sim-pod.js';
import type { SimulationContext } from '../../model/simulation-context.js';
import type { RequestRouter } from '../dataplane.js';

export class HostKeyedPoolRouter implements RequestRouter, ConnectionOwner {
  readonly #ctx: SimulationContext;
  readonly #idle: SimConnection[][];
  readonly #maxIdle: number;

  constructor(ctx: SimulationContext) {
    this.#ctx = ctx;
    this.#idle = Array.from({ length: ctx.clients.length }, () => []);
    this.#maxIdle = ctx.scenario.clients.maxIdleConnsPerHost;
    ctx.connections.setOwner(this);
  }

  start(): void {}

  send(client: SimClient, slot: number): void {
    const ctx = this.#ctx;
    const idle = this.#idle[client.index] as SimConnection[];
    let conn: SimConnection | undefined;
    while (conn === undefined && idle.length > 0) {
      const candidate = idle.pop() as SimConnection;
      if (ctx.connections.usable(candidate)) conn = candidate;
    }
    if (conn === undefined) {
      // Dial: the Service resolves to one random eligible endpoint.
      const pods = ctx.eligiblePods;
      if (pods.length === 0) {
        ctx.fail(slot);
        return;
      }
      const pod = pods[ctx.streams.dataplane.int(pods.length)] as SimPod;
      conn = ctx.connections.open(client, pod, false);
    }
    ctx.requests.conn[slot] = conn.id;
    ctx.connections.startRequest(conn);
    ctx.deliver(slot, conn.pod);
  }

  done(slot: number): void {
    const ctx = this.#ctx;
    const conn = ctx.connections.get(ctx.requests.conn[slot] as number);
    ctx.connections.endRequest(conn);
    if (conn.state !== 'open') return;
    const idle = this.#idle[conn.client.index] as SimConnection[];
    if (idle.length < this.#maxIdle) idle.push(conn);
    else ctx.connections.retire(conn);
  }

  endpointsChanged(): void {}

  podGone(pod: SimPod): void {
    const conns = [...this.#ctx.connections.openTo(pod)];
    for (const conn of conns) this.#ctx.connections.abort(conn);
  }

  // Closed connections are dropped from the idle stacks lazily, when popped.
  retired(): void {}
  closed(conn: SimConnection): void {
    const idle = this.#idle[conn.client.index] as SimConnection[];
    const i = idle.indexOf(conn);
    if (i >= 0) idle.splice(i, 1);
  }
}
