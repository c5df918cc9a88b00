/**
 * An L4 (`tcp`) listener: each client connection is balanced once, when it opens, and then
 * piped byte for byte to its endpoint. Each connection is one attempt from the cluster
 * (`clusterInternals(cluster).acquire()`), held from open to close: the cluster's `requests`
 * count connections, and `least-connections` uses the cluster's load policy fed with open
 * connections as "in flight" (proxy-wide across all listeners on the cluster); `maglev` hashes
 * the client address (`hashKey(remoteAddress)`) so a client keeps its endpoint. A failed
 * upstream connect (refused, or the connect timeout on the injected clock) goes through
 * `attempt.retry` — the cluster's one retry policy (`retries.connectFailures`), counted once by
 * the cluster — and the attempt ends when the upstream connection closes: `success` unless it
 * failed (`transport-error`). Client bytes that arrive before the upstream connects stay
 * buffered in the client socket until the pipe starts.
 *
 * `maxConnections` is admitted by the socket this listener serves (`ListenerBinding`); a tcp
 * connection is never idle to admission (its state is the client's and the upstream's), so at
 * the limit a new connection is refused unless an idle connection of an L7 listener this one
 * replaced on reload can make room. `maxConnectionAgeMs` ends connections at their age so long
 * connections come back through the balancer: each connection's own limit is drawn by the
 * project's one `LifetimePolicy` (the lifetime spec's `maxConnectionAgeMs`, its default ±10%
 * `ageJitter`) from the injected `Random`, and the timer runs on the injected `Clock`.
 */
import net, { type Socket } from 'node:net';
import type { Logger } from 'pino';
import { hashKey } from '../../balancing/picker.js';
import type { Attempt, AttemptRequest } from '../../cluster/attempt.js';
import { clusterInternals } from '../../cluster/cluster-internals.js';
import type { Clock, TimerHandle } from '../../core/clock.js';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import type { Random } from '../../core/random.js';
import { Shutdown } from '../../core/shutdown.js';
import type { ProxyMetrics } from '../../metrics/proxy-metrics.js';
import { LifetimePolicy } from '../../pool/lifetime-policy.js';
import type { ListenerConfig } from '../config/config-schema.js';
import { NEVER_IDLE } from '../listener/connection-admission.js';
import type { ListenerBinding } from '../listener/listener-binding.js';
import { ListenerSockets } from '../listener/listener-sockets.js';
import { statusForError } from '../routing/local-reply.js';
import type { ProxyCluster } from '../upstream/proxy-cluster.js';

const CONNECT_FAILURE = { type: 'connect-failure' } as const;
/** A connection as the retry policy sees it: nothing is sent before the connect, and it is never "idempotent". */
const TCP_REQUEST: AttemptRequest = { method: 'CONNECT', replayable: true, responded: false };

export interface TcpListenerDeps {
  readonly cluster: () => ProxyCluster | undefined;
  readonly metrics: ProxyMetrics;
  readonly logger: Logger;
  /** Connect timeouts and connection ages run on this clock. */
  readonly clock: Clock;
  /** Draws each connection's age limit (its jitter), through the listener's `LifetimePolicy`. */
  readonly random: Random;
}

export class TcpListener {
  readonly config: ListenerConfig;
  readonly #deps: TcpListenerDeps;
  readonly #server: net.Server;
  readonly #sockets: ListenerSockets;
  readonly #shutdown = new Shutdown();
  /** The connection age rule (`maxConnectionAgeMs`, jittered); undefined when no age is set. */
  readonly #lifetime: LifetimePolicy | undefined;
  #binding: ListenerBinding | undefined;

  constructor(config: ListenerConfig, deps: TcpListenerDeps) {
    this.config = config;
    this.#deps = deps;
    this.#lifetime =
      config.maxConnectionAgeMs === undefined
        ? undefined
        : new LifetimePolicy(
            { maxConnectionAgeMs: config.maxConnectionAgeMs },
            deps.random,
            `listeners.${config.name}`,
          );
    this.#sockets = new ListenerSockets(config.name, deps.metrics, deps.clock);
    this.#server = net.createServer({ noDelay: true, pauseOnConnect: true }, (socket) => this.#onConnection(socket));
  }

  /**
   * Starts serving the connections `binding` accepts (see `L7Listener.listen`) under this
   * listener's `maxConnections`; returns the bound port.
   */
  listen(binding: ListenerBinding): number {
    this.#binding = binding;
    binding.serve((socket) => this.#server.emit('connection', socket), {
      maxConnections: this.config.limits.maxConnections,
    });
    return binding.port;
  }

  get port(): number {
    return this.#binding?.port ?? 0;
  }

  get connections(): number {
    return this.#sockets.size;
  }

  #onConnection(client: Socket): void {
    // A byte stream's state is the client's and the upstream's: never closed to make room.
    this.#binding?.idleWhen(client, NEVER_IDLE);
    this.#sockets.track(client);
    client.on('error', () => {});
    const cluster = this.#deps.cluster();
    if (cluster === undefined) {
      client.destroy();
      return;
    }
    const hash = this.config.balance === 'maglev' ? hashKey(client.remoteAddress ?? '') : undefined;
    this.#connect(client, cluster, clusterInternals(cluster.cluster).acquire(undefined, hash));
  }

  #connect(client: Socket, cluster: ProxyCluster, next: Attempt | EvenlbError | undefined): void {
    if (next === undefined || next instanceof EvenlbError) {
      if (next !== undefined) this.#deps.metrics.rejected(this.config.name, statusForError(next).reason);
      client.destroy();
      return;
    }
    const attempt = next;
    if (client.destroyed) {
      attempt.end('aborted');
      return;
    }
    const { endpoint } = attempt;
    let connected = false;
    let failed = false;
    const upstream = net.connect({ host: endpoint.address, port: endpoint.port, noDelay: true });
    const clock = this.#deps.clock;
    const timer = clock.setTimeout(
      () => upstream.destroy(new EvenlbError(ErrorCodes.CONNECT_FAILED, `connect to ${endpoint.key} timed out`)),
      cluster.config.connectTimeoutMs,
    );
    let ageTimer: TimerHandle | undefined;
    upstream.once('connect', () => {
      timer.cancel();
      connected = true;
      // The cluster's stats count it as the endpoint's open connection until it closes.
      clusterInternals(cluster.cluster).noteConnection(endpoint.key, 'opened');
      upstream.pipe(client);
      client.pipe(upstream);
      client.resume();
      // This connection's own limit, drawn once as it opens (undefined: no age limit).
      const maxAgeMs = this.#lifetime?.drawMaxAgeMs();
      if (maxAgeMs !== undefined) {
        ageTimer = clock.setTimeout(() => {
          // Half-close both ways: the client sees EOF and reconnects through the balancer.
          client.end();
          upstream.end();
        }, maxAgeMs);
      }
    });
    upstream.on('error', (err: Error) => {
      timer.cancel();
      if (connected) {
        failed = true;
        client.destroy();
        return;
      }
      // Nothing was sent: the cluster's retry policy decides whether another endpoint is tried.
      const retry = attempt.retry(CONNECT_FAILURE, TCP_REQUEST);
      if (retry === undefined)
        this.#deps.logger.warn({ endpoint: endpoint.key, err: err.message }, 'tcp connect failed');
      this.#connect(client, cluster, retry);
    });
    upstream.once('close', () => {
      timer.cancel();
      ageTimer?.cancel();
      // After a failed connect the attempt has already ended (retry); this end is then ignored.
      attempt.end(connected ? (failed ? 'transport-error' : 'success') : 'aborted');
      if (connected) {
        clusterInternals(cluster.cluster).noteConnection(endpoint.key, 'closed');
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
