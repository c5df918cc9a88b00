/**
 * The per-server bookkeeping shared by `recycleConnections` and `drain`: one registry per
 * server (reference counted), tracking every HTTP/1 socket and HTTP/2 session from the moment
 * it is first attached. It sees requests before any application listener does by wrapping the
 * server's `emit` (and each session's): only there can a request pipelined behind a closing
 * response, or a stream opened after GOAWAY, be kept from the application entirely — a
 * prepended listener can look, but cannot stop the event. Detaching restores `emit`.
 *
 * Connections opened before the registry attached are adopted at their next request (their age
 * counts from then); `drain` still closes the rest at the end of its grace.
 *
 * Tracking connections is paid for only while a part that needs it holds the registry
 * (`recycleConnections`, `drain`; `acquire(..., true)`). Load reporting alone (`reportLoad`)
 * needs to see requests, not connections: untracked, the registry keeps no per-connection record
 * and no connection listener, and follows each request with one `close` listener for its tap.
 * Tracking starts with the first tracking holder (connections open then are adopted at their
 * next request) and its listeners go with the last; records of connections already tracked
 * stay until those connections close.
 */
import type http from 'node:http';
import type http2 from 'node:http2';
import type net from 'node:net';
import type tls from 'node:tls';
import { ServerMetrics } from '../metrics/server-metrics.js';
import type { CloseReason } from '../pool/lifetime-policy.js';
import type { ConnectionStats, DrainResult, RegistryDrainOptions } from './connection-stats.js';
import { type Emitter, filterEmit } from './emit-filter.js';
import { Http1Connection } from './http1-connection.js';
import { Http2Connection } from './http2-connection.js';
import type { LoadEndpoint } from './load/load-endpoint.js';
import { type RecyclerSettings, trackingOnlySettings } from './recycler-options.js';
import type { RequestTap } from './request-tap.js';
import { type RecyclableServer, type ServerKind, serverKind, stopListening } from './server-kind.js';
import type { ConnectionHost, TrackedConnection } from './tracked-connection.js';

export type { ConnectionStats, DrainResult, RegistryDrainOptions } from './connection-stats.js';

const REASONS: readonly CloseReason[] = [
  'requests',
  'age',
  'idle',
  'shutdown',
  'endpoint-removed',
  'error',
  'peer',
  'fair-share',
];
/** After the grace, how long to wait for destroyed connections to report closed. */
const SETTLE_MS = 1000;

const registries = new WeakMap<object, ConnectionRegistry>();

export class ConnectionRegistry implements ConnectionHost {
  readonly server: RecyclableServer;
  readonly kind: ServerKind;
  settings: RecyclerSettings;
  /**
   * Where the server's load document is served (fair-share exchange, load probes): it answers
   * an HTTP/1 request for it on the server itself, and the request never reaches the application.
   */
  loadEndpoint: LoadEndpoint | undefined;
  /** Sees every request handed to the application (load reporting). */
  tap: RequestTap | undefined;
  #refs = 0;
  /** Holders that need connections tracked. */
  #trackRefs = 0;
  readonly #untrack: (() => void)[] = [];
  #attached = false;
  #owner: object | undefined;
  #metrics: ServerMetrics | undefined;
  readonly #connections = new Map<TrackedConnection, ServerMetrics | undefined>();
  readonly #bySocket = new WeakMap<net.Socket, Http1Connection>();
  readonly #bySession = new WeakMap<http2.ServerHttp2Session, Http2Connection>();
  /** Every accepted TCP socket, for the last-resort destroy at the end of a drain. */
  readonly #sockets = new Set<net.Socket>();
  readonly #detach: (() => void)[] = [];
  #draining = false;
  #drain: Promise<DrainResult> | undefined;
  #forceDrain: (() => void) | undefined;
  readonly #emptyWaiters: (() => void)[] = [];
  #opened = 0;
  #requests = 0;
  #dropped = 0;
  #refused = 0;
  readonly #closed = Object.fromEntries(REASONS.map((r) => [r, 0])) as Record<CloseReason, number>;

  private constructor(server: RecyclableServer, kind: ServerKind) {
    this.server = server;
    this.kind = kind;
    this.settings = trackingOnlySettings();
  }

  /**
   * The server's registry, attached on first use; pair every call with `release(tracking)`.
   * `tracking` false: the holder needs requests seen (the tap, the load document), not
   * connections tracked.
   */
  static acquire(server: unknown, component: string, tracking = true): ConnectionRegistry {
    const kind = serverKind(server, component);
    const s = server as RecyclableServer;
    let registry = registries.get(s);
    if (registry === undefined) {
      registry = new ConnectionRegistry(s, kind);
      registries.set(s, registry);
    }
    if (registry.#refs++ === 0) registry.#attach();
    if (tracking && registry.#trackRefs++ === 0) registry.#startTracking();
    return registry;
  }

  /** Drops one reference taken with the same `tracking`; the last one detaches from the server. */
  release(tracking = true): void {
    if (this.#refs === 0) return;
    if (tracking && this.#trackRefs > 0 && --this.#trackRefs === 0) this.#stopTracking();
    if (--this.#refs > 0) return;
    this.#attached = false;
    for (const undo of this.#detach.splice(0)) undo();
    registries.delete(this.server);
  }

  get draining(): boolean {
    return this.#draining;
  }

  get keepAliveTimeoutMs(): number | undefined {
    const ms = (this.server as { keepAliveTimeout?: unknown }).keepAliveTimeout;
    return typeof ms === 'number' ? ms : undefined;
  }

  /** Installs recycler settings; `owner` identifies the recycler (one per server). */
  configure(owner: object, settings: RecyclerSettings): boolean {
    if (this.#owner !== undefined && this.#owner !== owner) return false;
    this.#owner = owner;
    this.settings = settings;
    const registry = settings.options.metrics?.registry;
    this.#metrics = registry === undefined ? undefined : new ServerMetrics(registry);
    for (const c of this.#connections.keys()) c.reconfigure();
    return true;
  }

  /** Removes the recycler's settings: connections are tracked, no longer limited. */
  unconfigure(owner: object): void {
    if (this.#owner !== owner) return;
    this.#owner = undefined;
    this.#metrics = undefined;
    this.settings = trackingOnlySettings(this.settings.clock);
    for (const c of this.#connections.keys()) c.reconfigure();
  }

  /** Requests (HTTP/2: streams) handed to the application since the registry attached. */
  get requestsTotal(): number {
    return this.#requests;
  }

  /** The connections open now. */
  connections(): IterableIterator<TrackedConnection> {
    return this.#connections.keys();
  }

  stats(): ConnectionStats {
    return Object.freeze({
      open: this.#connections.size,
      opened: this.#opened,
      closed: Object.freeze({ ...this.#closed }),
      requests: this.#requests,
      droppedRequests: this.#dropped,
      refusedStreams: this.#refused,
    });
  }

  onClosed(connection: TrackedConnection, reason: CloseReason): void {
    if (!this.#connections.has(connection)) return;
    const metrics = this.#connections.get(connection);
    this.#connections.delete(connection);
    if (this.#connections.size === 0) for (const resolve of this.#emptyWaiters.splice(0)) resolve();
    this.#closed[reason]++;
    const ageMs = this.settings.clock.now() - connection.openedAtMs;
    metrics?.closed(connection.protocol, reason, connection.requests, ageMs);
  }

  /**
   * Stops accepting connections, retires every open one (`Connection: close` on its next
   * response, GOAWAY on HTTP/2) and resolves once all have closed, or destroys the leftovers
   * when `graceMs` has passed. Idempotent: later calls get the first drain's promise.
   */
  drain(options: RegistryDrainOptions): Promise<DrainResult> {
    this.#drain ??= this.#runDrain(options);
    return this.#drain;
  }

  /** Ends a running drain now, destroying what is left (a second signal does this). */
  forceDrain(): void {
    this.#forceDrain?.();
  }

  async #runDrain({ graceMs, clock }: RegistryDrainOptions): Promise<DrainResult> {
    const startMs = clock.now();
    this.#draining = true;
    const connectionsAtStart = this.#connections.size;
    let inFlightAtStart = 0;
    for (const c of this.#connections.keys()) inFlightAtStart += c.inFlight;

    // The listener's 'close' comes once every socket is gone, a tick before the sockets' own
    // 'close' events that settle the tracked connections: wait for both.
    const serverClosed = new Promise<void>((resolve) => this.server.once('close', () => resolve()));
    const closed = serverClosed.then(() => this.#whenNoConnections());
    stopListening(this.server);
    for (const c of [...this.#connections.keys()]) c.retire('shutdown');

    let graceTimer: { cancel(): void } | undefined;
    const graceOver = new Promise<void>((resolve) => {
      graceTimer = clock.setTimeout(resolve, graceMs);
      this.#forceDrain = resolve;
    });
    const timedOut = await Promise.race([closed.then(() => false), graceOver.then(() => true)]);
    graceTimer?.cancel();
    this.#forceDrain = undefined;

    let destroyed = 0;
    if (timedOut) {
      for (const c of [...this.#connections.keys()]) {
        if (c.closed) continue;
        destroyed++;
        c.destroy('shutdown');
      }
      for (const socket of this.#sockets) socket.destroy();
      (this.server as { closeAllConnections?: () => void }).closeAllConnections?.();
      let settleTimer: { cancel(): void } | undefined;
      await Promise.race([
        closed,
        new Promise<void>((resolve) => (settleTimer = clock.setTimeout(resolve, SETTLE_MS))),
      ]);
      settleTimer?.cancel();
    }
    return Object.freeze({
      connectionsAtStart,
      inFlightAtStart,
      destroyed,
      timedOut,
      elapsedMs: clock.now() - startMs,
    });
  }

  #whenNoConnections(): Promise<void> {
    if (this.#connections.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#emptyWaiters.push(resolve));
  }

  #attach(): void {
    this.#attached = true;
    const undo = filterEmit(
      this.server as unknown as Emitter,
      () => this.#attached,
      (event, first, second) => this.#onServerEvent(event, first, second),
    );
    this.#detach.push(undo);
  }

  /** Listens for new connections (HTTP/1 sockets, HTTP/2 sessions) to track them from their start. */
  #startTracking(): void {
    const server = this.server;
    const kind = this.kind;
    const on = <A extends unknown[]>(event: string, listener: (...args: A) => void): void => {
      server.prependListener(event, listener);
      this.#untrack.push(() => server.removeListener(event, listener));
    };

    on('connection', (socket: net.Socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
      if (kind === 'http1') this.#adoptSocket(socket);
    });
    if (kind === 'https1' || kind === 'h2-secure') {
      on('secureConnection', (socket: tls.TLSSocket) => {
        if (kind === 'https1' || socket.alpnProtocol !== 'h2') this.#adoptSocket(socket);
      });
    }
    if (kind === 'h2c' || kind === 'h2-secure') {
      on('session', (session: http2.ServerHttp2Session) => this.#adoptSession(session));
    }
  }

  #stopTracking(): void {
    for (const undo of this.#untrack.splice(0)) undo();
  }

  /** Server-level events; false swallows the event. */
  #onServerEvent(event: string | symbol, first: unknown, second: unknown): boolean {
    switch (event) {
      case 'request':
      case 'checkContinue':
      case 'checkExpectation': {
        const req = first as http.IncomingMessage;
        if (req.httpVersionMajor >= 2) return true;
        const res = second as http.ServerResponse;
        if (this.loadEndpoint?.answer(req, res) === true) return false;
        if (this.#trackRefs === 0) {
          this.#requests++;
          const tapped = this.tap?.request(req, res);
          if (tapped !== undefined) res.on('close', () => tapped.end(res.statusCode >= 500));
          return true;
        }
        if (this.#adoptSocket(req.socket).admit(req, res, this.tap)) {
          this.#requests++;
          return true;
        }
        this.#dropped++;
        return false;
      }
      case 'upgrade':
      case 'connect': {
        // The socket leaves HTTP (WebSocket, tunnel): no longer ours to recycle.
        const socket = (first as http.IncomingMessage).socket;
        const connection = this.#bySocket.get(socket);
        if (connection !== undefined) {
          this.#bySocket.delete(socket);
          connection.abandon();
        }
        return true;
      }
      case 'stream': {
        // A stream on a session opened before we attached: adopt the session now.
        const stream = first as http2.ServerHttp2Stream;
        const session = stream.session as http2.ServerHttp2Session | undefined;
        if (session !== undefined && this.#trackRefs === 0 && !this.#bySession.has(session)) {
          this.#requests++;
          this.tap?.stream(stream);
          return true;
        }
        if (session === undefined || this.#bySession.has(session)) return true;
        return this.#admitStream(this.#adoptSession(session), stream);
      }
      default:
        return true;
    }
  }

  #admitStream(connection: Http2Connection, stream: http2.ServerHttp2Stream): boolean {
    if (connection.admit(stream)) {
      this.#requests++;
      this.tap?.stream(stream);
      return true;
    }
    this.#refused++;
    return false;
  }

  #adoptSocket(socket: net.Socket): Http1Connection {
    let connection = this.#bySocket.get(socket);
    if (connection === undefined) {
      connection = new Http1Connection(this, socket);
      this.#bySocket.set(socket, connection);
      this.#register(connection);
    }
    return connection;
  }

  #adoptSession(session: http2.ServerHttp2Session): Http2Connection {
    let connection = this.#bySession.get(session);
    if (connection === undefined) {
      const c = new Http2Connection(this, session);
      connection = c;
      this.#bySession.set(session, c);
      filterEmit(
        session as unknown as Emitter,
        () => this.#attached,
        (event, first) => {
          if (event !== 'stream' || this.#bySession.get(session) !== c) return true;
          return this.#admitStream(c, first as http2.ServerHttp2Stream);
        },
      );
      this.#register(c);
    }
    return connection;
  }

  #register(connection: TrackedConnection): void {
    this.#connections.set(connection, this.#metrics);
    this.#opened++;
    this.#metrics?.opened(connection.protocol);
    connection.start();
  }
}
