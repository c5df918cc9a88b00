/**
 * `maxConnections` for an L7 listener: client connections are admitted in order of arrival, and
 * each tells (through `idleWhen`) whether it is idle — nothing received yet, a TLS handshake in
 * progress, keep-alive between requests, an HTTP/2 session with no open stream. At the limit a
 * new connection makes room by closing the oldest idle one; when none is idle it is refused
 * (closed at once), so a request already admitted is never failed to let another in. Cost: a
 * set insertion per connection, and a scan for the oldest idle one only at the limit.
 */
import type { Socket } from 'node:net';

export class ConnectionAdmission {
  readonly #limit: number;
  readonly #onEvict: () => void;
  /** Admitted connections, oldest first (a Set keeps insertion order). */
  readonly #open = new Set<Socket>();
  readonly #idle = new WeakMap<Socket, () => boolean>();

  /** `limit` 0 = unlimited; `onEvict` counts a connection closed to make room. */
  constructor(limit: number, onEvict: () => void) {
    this.#limit = limit;
    this.#onEvict = onEvict;
  }

  get size(): number {
    return this.#open.size;
  }

  /**
   * Admits `socket` (true), closing the oldest idle connection first when at the limit; false
   * (and `socket` destroyed) when every admitted connection is busy.
   */
  admit(socket: Socket): boolean {
    if (this.#limit > 0 && this.#open.size >= this.#limit && !this.#evictOldestIdle()) {
      socket.destroy();
      return false;
    }
    this.#open.add(socket);
    this.#idle.set(socket, IDLE);
    socket.once('close', () => this.#open.delete(socket));
    return true;
  }

  /** How to tell whether `socket` is idle from now on (new connections count as idle until told). */
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

const IDLE = (): boolean => true;

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
