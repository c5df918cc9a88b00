/**
 * Plumbing every proxy listener shares: binding a server to a `host:port` address
 * (`listenAt`, `boundPort`) and `ListenerSockets`, the set of client connections one listener
 * has open — counted in the proxy metrics while open, drained on a graceful close (polled
 * until none is left, the rest destroyed after a deadline) and destroyed at once on an abrupt
 * one. The L7 and L4 listeners and the admin server differ only in what they do per socket.
 */
import type net from 'node:net';
import type { Socket } from 'node:net';
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { ProxyMetrics } from '../../metrics/proxy-metrics.js';
import { parseAddress } from '../config/listen-address.js';

/** How often a draining listener looks whether its connections are gone. */
const DRAIN_POLL_MS = 50;

/**
 * The accept queue asked of the kernel (which caps it at `net.core.somaxconn`, 4096 on current
 * kernels). Node's default of 511 overflows when thousands of connections arrive at once — a
 * flood of idle connections, a fleet reconnecting after a rollout — and a SYN dropped from a
 * full queue costs its client a one-second retransmission, whoever it is.
 */
const LISTEN_BACKLOG = 4096;

/**
 * Binds `server` to `address` (`host:port`, port 0 for an ephemeral one); resolves with the
 * bound port, rejects with the listen error.
 *
 * @example
 * const port = await listenAt(net.createServer(), '127.0.0.1:0');
 */
export function listenAt(server: net.Server, address: string): Promise<number> {
  const { host, port } = parseAddress(address);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
      server.off('error', reject);
      resolve((server.address() as net.AddressInfo).port);
    });
  });
}

/** The port `server` is bound to, or 0 before it listens. */
export function boundPort(server: net.Server): number {
  return (server.address() as net.AddressInfo | null)?.port ?? 0;
}

/** The open client connections of one listener. */
export class ListenerSockets {
  readonly #name: string;
  readonly #metrics: ProxyMetrics;
  readonly #clock: Clock;
  readonly #sockets = new Set<Socket>();

  /** `name` is the listener's name in the connection metrics; drain polls and deadlines run on `clock`. */
  constructor(name: string, metrics: ProxyMetrics, clock: Clock) {
    this.#name = name;
    this.#metrics = metrics;
    this.#clock = clock;
  }

  /** Connections open now. */
  get size(): number {
    return this.#sockets.size;
  }

  /** Counts `socket` as open until it closes. */
  track(socket: Socket): void {
    this.#sockets.add(socket);
    this.#metrics.connectionOpened(this.#name);
    socket.once('close', () => {
      this.#sockets.delete(socket);
      this.#metrics.connectionClosed(this.#name);
    });
  }

  /**
   * Resolves when every connection has closed, polling (after calling `onPoll`, which may nudge
   * idle connections to close); connections still open after `timeoutMs` are destroyed.
   */
  drain(timeoutMs: number, onPoll?: () => void): Promise<void> {
    return new Promise<void>((resolve) => {
      const deadline: TimerHandle = this.#clock.setTimeout(() => this.destroyAll(), timeoutMs);
      const check = (): void => {
        onPoll?.();
        if (this.#sockets.size === 0) {
          deadline.cancel();
          resolve();
          return;
        }
        this.#clock.setTimeout(check, DRAIN_POLL_MS);
      };
      check();
    });
  }

  /** Destroys every open connection. */
  destroyAll(): void {
    for (const s of this.#sockets) s.destroy();
  }
}
