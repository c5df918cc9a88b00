/**
 * An L7 listener: `http` (HTTP/1.1 and h2c prior knowledge on one port, told apart by the
 * HTTP/2 connection preface `PRI * HTTP/2.0`) or `https` (TLS, ALPN `h2` or `http/1.1`). A
 * plain `net` / `tls` server accepts connections and hands each to the right reader: HTTP/1.1
 * connections to the proxy's own data path (`Http1Downstream`, strict parsing, keep-alive
 * upstream sockets), HTTP/2 to a node:http2 server (`H2Front`); the data path hands the few
 * requests it does not carry (HTTP/1.0, `h2` clusters) to a node:http server (`NodeHttpFront`)
 * with the bytes already read. All three route with the one router and reach HTTP/1.1
 * upstreams through the one HTTP/1.1 exchange.
 *
 * Every connection state has a deadline, checked by one sweep per listener (`DeadlineSweep`):
 * the first bytes (`firstByteTimeoutMs`, also a partial h2 preface), the TLS handshake
 * (`tlsHandshakeTimeoutMs`), then the data path's, node:http's and the HTTP/2 session's own.
 * `maxConnections` is enforced by the socket this listener serves (`ListenerBinding`, which
 * admits each connection before handing it over, and keeps admitting across a reload): at the
 * limit the oldest idle connection makes room, and when none is idle the new one is refused;
 * this listener tells admission which of its connections are idle. Each close the proxy makes
 * itself is counted in `evenlb_proxy_downstream_closed_total` by reason.
 */

import type http2 from 'node:http2';
import net, { type Socket } from 'node:net';
import tls from 'node:tls';
import type { Logger } from 'pino';
import type { Clock } from '../../core/clock.js';
import type { Random } from '../../core/random.js';
import { Shutdown } from '../../core/shutdown.js';
import type { ProxyMetrics } from '../../metrics/proxy-metrics.js';
import type { ListenerConfig, ListenerTlsConfig } from '../config/config-schema.js';
import { H2Front } from '../h2/h2-front.js';
import { Http1Downstream } from '../http1/downstream-connection.js';
import type { Http1Context } from '../http1/http1-context.js';
import { NodeHttpFront } from '../http1/node-http-front.js';
import type { Swept } from '../http1/upstream-exchange.js';
import { forwardedClientCert } from './client-certificate.js';
import { admittedSocket } from './connection-admission.js';
import { DeadlineSweep } from './deadline-sweep.js';
import type { AccessEntry, L7Front, L7State } from './l7-front.js';
import type { ListenerBinding } from './listener-binding.js';
import { ListenerLoad } from './listener-load.js';
import { ListenerRecycling } from './listener-recycling.js';
import { ListenerSockets } from './listener-sockets.js';
import { ListenerTls } from './listener-tls.js';

export type { L7State } from './l7-front.js';

export interface L7ListenerDeps {
  readonly state: () => L7State;
  readonly metrics: ProxyMetrics;
  readonly logger: Logger;
  /** Timeouts, the sweep and access-log durations read this clock. */
  readonly clock: Clock;
  /** Draws recycled connections' age jitter. */
  readonly random: Random;
}

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

/** How often the listener's connections are checked for deadlines, at most. */
const SWEEP_MAX_MS = 250;
/**
 * How long a draining listener keeps an idle HTTP/1.1 keep-alive connection open (at most half
 * the drain timeout). A client may be writing its next request at the instant the proxy closes
 * an idle connection — the request then fails with a reset, which is how a SIGTERM under steady
 * keep-alive traffic fails requests. So a drain first retires every connection (the next
 * response carries `Connection: close`, after which the connection closes) and closes the ones
 * still idle only after this grace: a client that keeps sending leaves at a response boundary,
 * and only one silent for the whole grace can meet the race, as it could an idle timeout.
 */
const DRAIN_IDLE_GRACE_MS = 1_000;

/** A connection before its first bytes (or with a partial h2 preface): closed at its deadline. */
class Sniffing implements Swept {
  readonly socket: Socket;
  readonly #deadlineMs: number;
  readonly #expired: (s: Sniffing) => void;

  constructor(socket: Socket, deadlineMs: number, expired: (s: Sniffing) => void) {
    this.socket = socket;
    this.#deadlineMs = deadlineMs;
    this.#expired = expired;
  }

  check(nowMs: number): void {
    if (nowMs >= this.#deadlineMs) this.#expired(this);
  }
}

export class L7Listener {
  readonly config: ListenerConfig;
  readonly #deps: L7ListenerDeps;
  readonly #front: net.Server | tls.Server;
  readonly #tls: ListenerTls | undefined;
  readonly #sockets: ListenerSockets;
  readonly #sweep: DeadlineSweep;
  readonly #shared: L7Front;
  readonly #nodeHttp: NodeHttpFront;
  readonly #h2: H2Front;
  readonly #recycling: ListenerRecycling;
  readonly #load: ListenerLoad | undefined;
  /** Connections on the proxy's own HTTP/1.1 data path. */
  readonly #fast = new Set<Http1Downstream>();
  readonly #clientCerts = new WeakMap<Socket, string | undefined>();
  readonly #fastContext: Http1Context<Http1Downstream>;
  readonly #shutdown = new Shutdown();
  #binding: ListenerBinding | undefined;

  constructor(config: ListenerConfig, deps: L7ListenerDeps) {
    this.config = config;
    this.#deps = deps;
    const name = config.name;
    const limits = config.limits;
    this.#sockets = new ListenerSockets(name, deps.metrics, deps.clock);
    this.#sweep = new DeadlineSweep(
      deps.clock,
      Math.max(
        25,
        Math.min(
          SWEEP_MAX_MS,
          Math.floor(Math.min(limits.headersTimeoutMs, limits.idleTimeoutMs, limits.firstByteTimeoutMs) / 4),
        ),
      ),
    );
    const proto = config.protocol === 'https' ? 'https' : 'http';
    // Load reporting (listener-load.ts); its own load port binds here, as fair share's does.
    this.#load =
      config.loadReport === undefined
        ? undefined
        : new ListenerLoad(config, {
            clock: deps.clock,
            logger: deps.logger,
            counts: deps.metrics.loadReportCounts(name),
          });
    this.#shared = {
      config,
      proto,
      metrics: deps.metrics,
      logger: deps.logger,
      clock: deps.clock,
      sweep: this.#sweep,
      load: this.#load,
      state: deps.state,
      clientCert: (socket) => this.#clientCert(socket),
      access: (e, version) => this.#access(e, version),
      idleWhen: (socket, isIdle) => this.#binding?.idleWhen(admittedSocket(socket), isIdle),
    };
    this.#nodeHttp = new NodeHttpFront(this.#shared);
    this.#h2 = new H2Front(this.#shared);
    if (config.protocol === 'https') {
      this.#tls = new ListenerTls(config.tls as ListenerTlsConfig);
      this.#front = tls.createServer(
        {
          ...this.#tls.serverOptions(),
          ALPNProtocols: ['h2', 'http/1.1'],
          handshakeTimeout: limits.tlsHandshakeTimeoutMs,
        },
        (socket) => {
          this.#sockets.track(socket);
          if (socket.alpnProtocol === 'h2') this.#h2.take(socket);
          else this.#serveHttp1(socket, undefined);
        },
      );
      this.#front.on('connection', (raw: Socket) => raw.on('error', () => {}));
      // node:tls reports a handshake timeout but leaves the socket open: close it here.
      this.#front.on('tlsClientError', (err: NodeJS.ErrnoException, socket: tls.TLSSocket) => {
        if (err.code === 'ERR_TLS_HANDSHAKE_TIMEOUT') deps.metrics.closedBy(name, 'tls-handshake');
        socket.destroy();
      });
    } else {
      this.#front = net.createServer({ noDelay: true }, (socket) => this.#sniff(socket));
    }
    // Downstream recycling: age and request limits, fair-share shedding (listener-recycling.ts).
    this.#recycling = new ListenerRecycling(config, {
      h1: this.#nodeHttp.server,
      h2: this.#h2.server as http2.Http2Server,
      downstreams: this.#fast,
      metrics: deps.metrics,
      logger: deps.logger,
      clock: deps.clock,
      random: deps.random,
      port: () => this.port,
      draining: () => this.#shutdown.closed,
      probe: this.#load === undefined ? undefined : () => (this.#load as ListenerLoad).probe(),
    });
    this.#fastContext = {
      listener: name,
      proto,
      limits,
      trustForwarded: config.trustForwardedHeaders,
      metrics: deps.metrics,
      clock: deps.clock,
      load: this.#load,
      recycle: this.#recycling.policy,
      state: deps.state,
      handoff: (socket, pending) => this.#nodeHttp.take(socket, pending),
      clientCert: (socket) => this.#clientCert(socket),
      access: (e: AccessEntry) => this.#access(e, '1.1'),
      released: (conn) => {
        this.#fast.delete(conn);
        this.#sweep.delete(conn);
        this.#recycling.released(conn);
      },
      deadline: (reason) => deps.metrics.closedBy(name, reason),
    };
  }

  /** `X-Forwarded-Client-Cert` for a connection of a mutual-TLS listener (computed once per socket). */
  #clientCert(socket: Socket | undefined): string | undefined {
    if (socket === undefined || this.config.tls?.clientCa === undefined) return undefined;
    if (this.#clientCerts.has(socket)) return this.#clientCerts.get(socket);
    const value = forwardedClientCert(socket);
    this.#clientCerts.set(socket, value);
    return value;
  }

  /** Serves an HTTP/1.1 connection on the proxy's own data path; `head` = bytes already read. */
  #serveHttp1(socket: Socket, head: Buffer | undefined): void {
    const conn = new Http1Downstream(socket, this.#fastContext);
    // Accepted before this listener began to drain (a reload replaced it): served, then closed.
    if (this.#shutdown.closed) conn.retire();
    this.#fast.add(conn);
    this.#sweep.add(conn);
    this.#shared.idleWhen(socket, () => conn.idle);
    conn.start(head);
  }

  /**
   * Serves what `binding` accepts (the proxy's socket, handed over on reload) under this
   * listener's `maxConnections`; returns its port.
   */
  listen(binding: ListenerBinding): number {
    this.#binding = binding;
    const name = this.config.name;
    binding.serve((socket) => this.#front.emit('connection', socket), {
      maxConnections: this.config.limits.maxConnections,
      onEvict: () => this.#deps.metrics.closedBy(name, 'connection-limit'),
    });
    this.#recycling.start();
    return binding.port;
  }

  /** Its downstream recycling: fair-share figures, and ending shedding before a replacement binds. */
  get recycling(): ListenerRecycling {
    return this.#recycling;
  }

  /** Its load reporting (`listeners[].loadReport`); undefined when off. */
  get load(): ListenerLoad | undefined {
    return this.#load;
  }

  /** Frees its load port (fair share's or the load report's) for a replacement about to bind it; idempotent. */
  async stopLoadDocument(): Promise<void> {
    await Promise.all([this.#recycling.stopShedding(), this.#load?.stopServing()]);
  }

  get port(): number {
    return this.#binding?.port ?? 0;
  }

  /**
   * Re-reads an `https` listener's certificate files; new connections get the new ones when
   * they changed. Returns whether they changed; throws when a file cannot be used.
   */
  refreshTls(): boolean {
    return this.#tls?.refresh(this.#front as tls.Server) ?? false;
  }

  /**
   * Reads the first bytes: the HTTP/2 preface goes to the h2 server, anything else to HTTP/1.1.
   * Nothing (or a partial preface) within `firstByteTimeoutMs` closes the connection.
   */
  #sniff(socket: Socket): void {
    this.#sockets.track(socket);
    socket.on('error', () => {});
    const sweep = this.#sweep;
    const sniffing = new Sniffing(socket, this.#deps.clock.now() + this.config.limits.firstByteTimeoutMs, (s) => {
      sweep.delete(s);
      socket.off('data', onData);
      this.#deps.metrics.closedBy(this.config.name, 'first-byte');
      socket.destroy();
    });
    sweep.add(sniffing);
    socket.once('close', () => sweep.delete(sniffing));
    let head: Buffer | undefined;
    const onData = (chunk: Buffer): void => {
      head = head === undefined ? chunk : Buffer.concat([head, chunk]);
      const n = Math.min(head.length, H2_PREFACE.length);
      const isH2 = head.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      if (isH2 && head.length < H2_PREFACE.length) return;
      socket.off('data', onData);
      sweep.delete(sniffing);
      if (isH2) {
        socket.pause();
        socket.unshift(head);
        this.#h2.take(socket);
      } else {
        this.#serveHttp1(socket, head);
      }
    };
    socket.on('data', onData);
  }

  #access(e: AccessEntry, version: '1.1' | '2'): void {
    const durationMs = Math.round((this.#deps.clock.now() - e.startMs) * 1000) / 1000;
    const { startMs: _, ...fields } = e;
    this.#deps.logger.info({ access: true, listener: this.config.name, ...fields, version, durationMs }, 'request');
  }

  /** Open client connections (sockets and HTTP/2 sessions). */
  get connections(): number {
    return this.#sockets.size;
  }

  /**
   * Stops accepting; HTTP/1.x connections close after their next response (which carries
   * `Connection: close`) or once idle for the drain's grace (`DRAIN_IDLE_GRACE_MS`), HTTP/2
   * sessions get GOAWAY and finish their streams. Resolves when all are gone or after
   * `timeoutMs` (then the rest are destroyed). Always settles; idempotent; `destroy()` settles
   * it at once.
   */
  close(timeoutMs = 30_000): Promise<void> {
    return this.#shutdown.close(async () => {
      // Nothing is shed while draining; stopping now frees the load-exchange port at once for
      // a listener replacing this one on reload.
      const recycling = this.#recycling.close();
      const loadPort = this.#load?.stopServing();
      this.#front.close();
      this.#nodeHttp.drain();
      for (const c of [...this.#fast]) c.retire();
      this.#h2.close();
      const closeIdleAtMs = this.#deps.clock.now() + Math.min(DRAIN_IDLE_GRACE_MS, timeoutMs / 2);
      await this.#sockets.drain(timeoutMs, () => {
        if (this.#deps.clock.now() < closeIdleAtMs) return;
        this.#nodeHttp.closeIdle();
        for (const c of [...this.#fast]) c.closeSoon();
      });
      this.#nodeHttp.close();
      await Promise.all([recycling, loadPort]);
      await this.#load?.close();
      this.#sweep.close();
    });
  }

  /** Closes every connection at once (in-flight requests fail); settles a pending `close()`. Idempotent. */
  destroy(): Promise<void> {
    return this.#shutdown.destroy(async () => {
      this.#front.close();
      this.#nodeHttp.close();
      this.#nodeHttp.server.closeAllConnections();
      this.#h2.destroy();
      this.#sockets.destroyAll();
      this.#sweep.close();
      await Promise.all([this.#recycling.close(), this.#load?.close()]);
    });
  }
}
