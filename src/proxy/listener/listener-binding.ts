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
 * A binding also answers readiness: it is healthy while bound, served and accepting; an accept
 * error makes it unhealthy for `ACCEPT_ERROR_HOLD_MS` on the injected clock and is never an
 * uncaught `'error'`. Out of file descriptors, libuv accepts and closes connections without
 * reporting an error, so `descriptorProblem()` checks for that directly. `close()` stops accepting only: the
 * connections already handed over belong to their listener. Idempotent; always settles.
 *
 * @example
 * const binding = await ListenerBinding.bind('127.0.0.1:8080', systemClock);
 * binding.serve((socket) => server.emit('connection', socket), 0);
 * // later, on reload: binding.serve((socket) => replacement.emit('connection', socket), 0);
 * await binding.close();
 */
import { closeSync, openSync } from 'node:fs';
import net, { type Socket } from 'node:net';
import type { Clock } from '../../core/clock.js';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import { boundPort, listenAt } from './listener-sockets.js';

/** Receives each connection the binding accepts. */
export type ConnectionReceiver = (socket: Socket) => void;

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
   * Hands every connection accepted from now on — and those waiting — to `receiver`,
   * replacing the previous one; `maxConnections` (0 = unlimited) bounds the connections
   * accepted on this socket that are still open, whichever listener serves them.
   */
  serve(receiver: ConnectionReceiver, maxConnections: number): void {
    this.#receiver = receiver;
    this.#server.maxConnections = maxConnections > 0 ? maxConnections : Number.POSITIVE_INFINITY;
    for (const socket of this.#waiting) {
      this.#waiting.delete(socket);
      socket.off('error', ignore);
      if (!socket.destroyed) receiver(socket);
    }
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

  #accepted(socket: Socket): void {
    const receiver = this.#receiver;
    if (receiver !== undefined) {
      receiver(socket);
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
