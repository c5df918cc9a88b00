/**
 * `ListenerBinding`: a listening socket the proxy owns apart from the listener that serves it.
 * A reload replaces listeners, not sockets: a changed listener on an unchanged address gets the
 * running binding, and `serve()` swaps the receiver of every accepted connection in one
 * synchronous step, so each connection is accepted by exactly one listener (the old one before
 * the swap, the new one after) and none is refused — the socket never closes. This is the
 * design because Node 20 cannot bind a second socket beside the first (`reusePort` arrived in
 * Node 22.12 / 23.1), and closing first leaves a window where connections are refused and a
 * failed bind loses the address for good. Connections accepted after a new address is bound but
 * before its listener takes over (the rest of the reload is still being prepared) wait, at most
 * `WAITING_MAX` of them, and are handed over at `serve()` or closed with the binding.
 *
 * `limits.maxConnections` belongs to the socket too: the binding admits every connection
 * through its one `ConnectionAdmission` before handing it over, so at the limit the oldest idle
 * connection makes room — whichever listener serves it, a draining one's included — and a new
 * connection is refused only when every admitted one is busy. The listener serving a
 * connection says whether it is idle (`idleWhen`). Node's own `server.maxConnections` is only a
 * safety cap at `NODE_CAP_FACTOR` times the limit: Node counts a socket until its `'close'`
 * event, so right after admission closed idle connections to make room Node's count is above
 * admission's; at the factor of 2 Node refuses a connection only in a burst of more than
 * `maxConnections` accepts within one event-loop turn, all of them still unread — where
 * admission would have had only connections of that same burst to choose between — and
 * never displaces a connection with a request.
 *
 * A binding also answers readiness: it is healthy while bound, served and accepting; an accept
 * error makes it unhealthy for `ACCEPT_ERROR_HOLD_MS` on the injected clock and is never an
 * uncaught `'error'`. Out of file descriptors, libuv accepts and closes connections without
 * reporting an error, so `descriptorProblem()` checks for that directly. `close()` stops
 * accepting only: the connections already handed over belong to their listener. Idempotent;
 * always settles.
 *
 * @example
 * const binding = await ListenerBinding.bind('127.0.0.1:8080', systemClock);
 * binding.serve((socket) => server.emit('connection', socket), { maxConnections: 1000 });
 * // later, on reload: binding.serve((socket) => replacement.emit('connection', socket), { maxConnections: 1000 });
 * await binding.close();
 */
import { closeSync, openSync } from 'node:fs';
import net, { type Socket } from 'node:net';
import type { Clock } from '../../core/clock.js';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import { ConnectionAdmission } from './connection-admission.js';
import { boundPort, listenAt } from './listener-sockets.js';

/** Receives each connection the binding accepts (and admits). */
export type ConnectionReceiver = (socket: Socket) => void;

/** How the listener serving a binding wants its connections admitted. */
export interface ServeOptions {
  /** Open connections on this socket at most (0 = unlimited), whichever listener serves them. */
  readonly maxConnections: number;
  /** Counts a connection closed to make room (the serving listener's metric). */
  readonly onEvict?: () => void;
}

/** Node's `server.maxConnections` is this many times the admission limit (a safety cap only). */
export const NODE_CAP_FACTOR = 2;

/** Most connections held while no listener serves the binding yet; more are closed. */
export const WAITING_MAX = 512;
/** How long an accept error keeps the binding reported as not accepting, ms. */
export const ACCEPT_ERROR_HOLD_MS = 5_000;

const ignore = (): void => {};

/**
 * A bind failure as the operator reads it: the configuration field, the address and the
 * system's reason (`EVENLB_LISTEN_FAILED`).
 *
 * @example
 * listenError('listeners[1].address', '127.0.0.1:8443', err).message;
 * // proxy: "listeners[1].address" cannot listen on 127.0.0.1:8443: EADDRINUSE (another socket holds it)
 */
export function listenError(field: string, address: string, err: unknown): EvenlbError {
  const code = (err as NodeJS.ErrnoException).code;
  const why =
    code === 'EADDRINUSE'
      ? 'another socket holds it'
      : code === 'EADDRNOTAVAIL'
        ? 'not an address of this machine'
        : code === 'EACCES'
          ? 'a privileged port'
          : (err as Error).message;
  return new EvenlbError(
    ErrorCodes.LISTEN_FAILED,
    `proxy: "${field}" cannot listen on ${address}: ${code ?? 'error'} (${why})`,
    {
      details: { field },
      cause: err,
    },
  );
}

/**
 * Why this process cannot accept a connection now, or undefined: every accepted connection
 * needs a file descriptor, and at the limit libuv accepts and closes connections silently
 * (no accept error reaches Node), so the check is whether one descriptor can be opened.
 *
 * @example
 * descriptorProblem(); // undefined, or 'out of file descriptors (EMFILE)'
 */
export function descriptorProblem(): string | undefined {
  try {
    closeSync(openSync('/dev/null', 'r'));
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'EMFILE' || code === 'ENFILE' ? `out of file descriptors (${code})` : undefined;
  }
}

export class ListenerBinding {
  /** The address as configured (`host:port`; port 0 = an ephemeral port, see `port`). */
  readonly address: string;
  readonly #server: net.Server;
  readonly #clock: Clock;
  #receiver: ConnectionReceiver | undefined;
  readonly #admission = new ConnectionAdmission();
  readonly #waiting = new Set<Socket>();
  #acceptError: { readonly atMs: number; readonly code: string } | undefined;
  #closing: Promise<void> | undefined;

  private constructor(address: string, clock: Clock) {
    this.address = address;
    this.#clock = clock;
    this.#server = net.createServer({ noDelay: true }, (socket) => this.#accepted(socket));
    // After listen(), an 'error' is an accept failure (EMFILE, ENFILE): noted, never thrown.
    this.#server.on('error', (err: NodeJS.ErrnoException) => {
      if (this.#server.listening) this.#acceptError = { atMs: this.#clock.now(), code: err.code ?? err.message };
    });
  }

  /**
   * Binds `address`; rejects with the listen error (EADDRINUSE, EADDRNOTAVAIL, EACCES), and
   * then nothing is left open.
   */
  static async bind(address: string, clock: Clock): Promise<ListenerBinding> {
    const binding = new ListenerBinding(address, clock);
    await listenAt(binding.#server, address);
    return binding;
  }

  /** The bound port (the ephemeral one for port 0). */
  get port(): number {
    return boundPort(this.#server);
  }

  /**
   * Hands every connection accepted from now on — and those waiting — to `receiver`, each
   * admitted first (`maxConnections`, see the module comment), replacing the previous receiver;
   * the connections already admitted stay admitted and count until they close.
   */
  serve(receiver: ConnectionReceiver, options: ServeOptions): void {
    const { maxConnections } = options;
    this.#receiver = receiver;
    this.#admission.configure(maxConnections, options.onEvict ?? ignore);
    this.#server.maxConnections = maxConnections > 0 ? NODE_CAP_FACTOR * maxConnections : Number.POSITIVE_INFINITY;
    for (const socket of this.#waiting) {
      this.#waiting.delete(socket);
      socket.off('error', ignore);
      if (!socket.destroyed) this.#handOver(socket, receiver);
    }
  }

  /**
   * How to tell whether `socket` — one this binding admitted (for TLS, the TCP socket under
   * it) — is idle, so that it may be closed to make room at the limit.
   */
  idleWhen(socket: Socket, isIdle: () => boolean): void {
    this.#admission.idleWhen(socket, isIdle);
  }

  /** Admitted connections still open, whichever listener serves them. */
  get connections(): number {
    return this.#admission.size;
  }

  /** True from `bind()` until `close()`. */
  get bound(): boolean {
    return this.#closing === undefined && this.#server.listening;
  }

  /** Undefined while bound and accepting; else why not. */
  problem(): string | undefined {
    if (!this.bound) return 'not listening';
    const e = this.#acceptError;
    if (e !== undefined && this.#clock.now() - e.atMs < ACCEPT_ERROR_HOLD_MS) return `accept failing (${e.code})`;
    if (this.#receiver === undefined) return 'no listener serves it yet';
    return undefined;
  }

  #handOver(socket: Socket, receiver: ConnectionReceiver): void {
    if (this.#admission.admit(socket)) receiver(socket);
  }

  #accepted(socket: Socket): void {
    const receiver = this.#receiver;
    if (receiver !== undefined) {
      this.#handOver(socket, receiver);
      return;
    }
    if (this.#waiting.size >= WAITING_MAX) {
      socket.destroy();
      return;
    }
    socket.on('error', ignore);
    this.#waiting.add(socket);
    socket.once('close', () => this.#waiting.delete(socket));
  }

  /** Stops accepting and closes connections still waiting for a listener. Idempotent; always settles. */
  close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve) => {
      for (const socket of this.#waiting) socket.destroy();
      this.#waiting.clear();
      if (!this.#server.listening) {
        resolve();
        return;
      }
      // The callback waits for every socket this server accepted; listeners own those now.
      this.#server.close();
      resolve();
    });
    return this.#closing;
  }
}
