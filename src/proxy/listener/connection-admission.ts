/**
 * `maxConnections` for a listening socket (`ConnectionAdmission`, owned by its
 * `ListenerBinding`): client connections are admitted in order of arrival, and the listener
 * serving each tells (through `idleWhen`) whether it is idle — nothing received yet, a TLS
 * handshake in progress, keep-alive between requests, an HTTP/2 session with no open stream.
 * At the limit a new connection makes room by closing the oldest idle one; when none is idle it
 * is refused (closed at once), so a request already admitted is never failed to let another in.
 * A connection no listener has described counts as idle; one that must never be closed to make
 * room (a `tcp` listener's byte stream) is described with `NEVER_IDLE`.
 *
 * The state belongs to the socket, not to a listener: when a reload hands the socket to a new
 * listener, the old listener's connections stay admitted (and count) until they close, and the
 * idle ones among them — the oldest — are the first to make room. The limit and the eviction
 * counter are set by whichever listener serves the socket now (`configure`); a lower limit
 * closes nothing by itself: the next connection closes idle ones until the count is under it,
 * or is refused. Cost: a set insertion per connection, and a scan for the oldest idle one only at the limit.
 *
 * @example
 * const admission = new ConnectionAdmission();
 * admission.configure(1000, () => metrics.closedBy('web', 'connection-limit'));
 * if (admission.admit(socket)) admission.idleWhen(socket, () => conn.idle);
 */
import type { Socket } from 'node:net';

/** For a connection that is never closed to make room. */
export const NEVER_IDLE = (): boolean => false;
const IDLE = (): boolean => true;

export class ConnectionAdmission {
  #limit = 0;
  #onEvict: () => void = () => {};
  /** Admitted connections, oldest first (a Set keeps insertion order). */
  readonly #open = new Set<Socket>();
  readonly #idle = new WeakMap<Socket, () => boolean>();

  /** Sets the limit (0 = unlimited) and what counts a connection closed to make room. */
  configure(limit: number, onEvict: () => void): void {
    this.#limit = limit;
    this.#onEvict = onEvict;
  }

  /** The limit now (0 = unlimited). */
  get limit(): number {
    return this.#limit;
  }

  /** Admitted connections still open. */
  get size(): number {
    return this.#open.size;
  }

  /**
   * Admits `socket` (true), closing the oldest idle connection first when at the limit; false
   * (and `socket` destroyed) when every admitted connection is busy.
   */
  admit(socket: Socket): boolean {
    while (this.#limit > 0 && this.#open.size >= this.#limit) {
      if (!this.#evictOldestIdle()) {
        socket.destroy();
        return false;
      }
    }
    this.#open.add(socket);
    this.#idle.set(socket, IDLE);
    socket.once('close', () => this.#open.delete(socket));
    return true;
  }

  /** How to tell whether `socket` is idle from now on (admitted connections count as idle until told). */
  idleWhen(socket: Socket, isIdle: () => boolean): void {
    if (this.#open.has(socket)) this.#idle.set(socket, isIdle);
  }

  #evictOldestIdle(): boolean {
    for (const s of this.#open) {
      if (this.#idle.get(s)?.() !== true) continue;
      this.#open.delete(s);
      s.destroy();
      this.#onEvict();
      return true;
    }
    return false;
  }
}

/**
 * The socket admission counted for `socket`: the TCP socket under a TLS one (`tls.Server`
 * wraps each accepted socket; node:tls keeps the wrapped one as `_parent`), else `socket`.
 *
 * @example
 * admission.idleWhen(admittedSocket(tlsSocket), () => conn.idle);
 */
export function admittedSocket(socket: Socket): Socket {
  return (socket as Socket & { _parent?: Socket })._parent ?? socket;
}
