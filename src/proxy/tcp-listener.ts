/**
 * An L4 (`tcp`) listener: each client connection is balanced once, when it opens, and then
 * piped byte for byte to its endpoint. `least-connections` uses the cluster's load policy fed
 * with open connections as "in flight" (every connection is counted in the endpoint's
 * `EndpointLoad` from open to close, proxy-wide across all listeners on the cluster); `maglev`
 * hashes the client address (`PickContext.hash = hashKey(remoteAddress)`) so a client keeps
 * its endpoint. `maxConnectionAgeMs` ends connections at their (±10% jittered) age so long
 * connections come back through the balancer; a failed connect tries another endpoint.
 */
import net, { type Socket } from 'node:net';
import type { Logger } from 'pino';
import { hashKey, type PickContext } from '../balancing/picker.js';
import type { Clock, TimerHandle } from '../core/clock.js';
import type { Random } from '../core/random.js';
import { Shutdown } from '../core/shutdown.js';
import type { ProxyMetrics } from '../metrics/proxy-metrics.js';
import type { ListenerConfig } from './config-schema.js';
import { boundPort, ListenerSockets, listenAt } from './listener-sockets.js';
import type { ProxyCluster } from './proxy-cluster.js';

export interface TcpListenerDeps {
  readonly cluster: () => ProxyCluster | undefined;
  readonly metrics: ProxyMetrics;
  readonly logger: Logger;
  /** Connect timeouts and connection ages run on this clock. */
  readonly clock: Clock;
  /** Draws each connection's age jitter. */
  readonly random: Random;
}

export class TcpListener {
  readonly config: ListenerConfig;
  readonly #deps: TcpListenerDeps;
  readonly #server: net.Server;
  readonly #sockets: ListenerSockets;
  readonly #shutdown = new Shutdown();

  constructor(config: ListenerConfig, deps: TcpListenerDeps) {
    this.config = config;
    this.#deps = deps;
    this.#sockets = new ListenerSockets(config.name, deps.metrics, deps.clock);
    this.#server = net.createServer({ noDelay: true, pauseOnConnect: true }, (socket) => this.#onConnection(socket));
    if (config.limits.maxConnections > 0) this.#server.maxConnections = config.limits.maxConnections;
  }

  listen(): Promise<number> {
    return listenAt(this.#server, this.config.address);
  }

  get port(): number {
    return boundPort(this.#server);
  }

  get connections(): number {
    return this.#sockets.size;
  }

  #onConnection(client: Socket): void {
    this.#sockets.track(client);
    client.on('error', () => {});
    const cluster = this.#deps.cluster();
    if (cluster === undefined) {
      client.destroy();
      return;
    }
    const context: PickContext = {};
    if (this.config.balance === 'maglev') context.hash = hashKey(client.remoteAddress ?? '');
    this.#connect(client, cluster, context, cluster.config.retries.connectFailures);
  }

  #connect(client: Socket, cluster: ProxyCluster, context: PickContext, retries: number): void {
    if (client.destroyed) return;
    const picked = cluster.balancer.picker.pick(context);
    if (picked.type === 'none') {
      this.#deps.metrics.rejected(this.config.name, picked.reason);
      client.destroy();
      return;
    }
    const { endpoint, load } = picked;
    const startMs = load.start();
    let ended = false;
    let connected = false;
    const end = (ok: boolean): void => {
      if (ended) return;
      ended = true;
      load.end(startMs, ok);
    };
    const upstream = net.connect({ host: endpoint.address, port: endpoint.port, noDelay: true });
    const clock = this.#deps.clock;
    const timer = clock.setTimeout(
      () => upstream.destroy(new Error('connect timeout')),
      cluster.config.connectTimeoutMs,
    );
    let ageTimer: TimerHandle | undefined;
    upstream.once('connect', () => {
      timer.cancel();
      connected = true;
      // The cluster's stats count it as the endpoint's open connection until it closes.
      cluster.cluster.noteConnection(endpoint.key, 'opened');
      upstream.pipe(client);
      client.pipe(upstream);
      client.resume();
      const age = this.config.maxConnectionAgeMs;
      if (age !== undefined) {
        const rnd = this.#deps.random.next();
        ageTimer = clock.setTimeout(
          () => {
            // Half-close both ways: the client sees EOF and reconnects through the balancer.
            client.end();
            upstream.end();
          },
          age * (0.9 + 0.2 * rnd),
        );
      }
    });
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      timer.cancel();
      if (!connected) {
        end(false);
        if (retries > 0) {
          context.exclude = endpoint.key;
          this.#connect(client, cluster, context, retries - 1);
          return;
        }
        this.#deps.logger.warn({ endpoint: endpoint.key, err: err.message }, 'tcp connect failed');
        client.destroy();
        return;
      }
      client.destroy();
    });
    upstream.once('close', () => {
      timer.cancel();
      ageTimer?.cancel();
      end(true);
      if (connected) {
        cluster.cluster.noteConnection(endpoint.key, 'closed');
        client.destroy();
      }
    });
    client.once('close', () => {
      if (!upstream.destroyed) upstream.destroy();
    });
  }

  /**
   * Stops accepting; open connections end by themselves or are destroyed after `timeoutMs`.
   * Always settles; idempotent; `destroy()` settles it at once.
   */
  close(timeoutMs = 30_000): Promise<void> {
    return this.#shutdown.close(async () => {
      this.#server.close();
      await this.#sockets.drain(timeoutMs);
    });
  }

  /** Cuts every connection (client and upstream side); settles a pending `close()`. Idempotent. */
  destroy(): Promise<void> {
    return this.#shutdown.destroy(async () => {
      this.#server.close();
      this.#sockets.destroyAll();
    });
  }
}
