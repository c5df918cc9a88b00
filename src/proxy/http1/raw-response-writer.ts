/**
 * Writes a response to a raw HTTP/1.1 client socket for the data path: the head is held until
 * the first body bytes (or the end of the response), so a small response leaves in one write and
 * an upstream that fails before any body byte can still get the client a local reply instead of
 * a cut; body bytes go out as they come, and a full socket buffer reports back-pressure.
 */
import type { Socket } from 'node:net';

/** Response bodies up to this size leave in the same write as their head. */
const COALESCE_BYTES = 16 * 1024;

export class RawResponseWriter {
  readonly #socket: Socket;
  #head: string | undefined;
  #wrote = false;

  constructor(socket: Socket) {
    this.#socket = socket;
  }

  /** A new response: nothing written yet. */
  reset(): void {
    this.#head = undefined;
    this.#wrote = false;
  }

  /** Holds `text`, the response head, until the first body bytes or `flush()`. */
  head(text: string): void {
    this.#head = text;
  }

  /** Drops a head not written yet (a local reply replaces it). */
  discard(): void {
    this.#head = undefined;
  }

  /** Something of the response reached the socket. */
  get started(): boolean {
    return this.#wrote;
  }

  /** Writes body bytes (after the held head); false when the socket buffer is full (`onDrain` runs once it drains). */
  body(chunk: Buffer, onDrain: () => void): boolean {
    const socket = this.#socket;
    this.#wrote = true;
    let ok: boolean;
    const head = this.#head;
    if (head === undefined) ok = socket.write(chunk);
    else {
      this.#head = undefined;
      if (chunk.length <= COALESCE_BYTES) {
        const out = Buffer.allocUnsafe(head.length + chunk.length);
        out.write(head, 0, 'latin1');
        chunk.copy(out, head.length);
        ok = socket.write(out);
      } else {
        socket.write(head, 'latin1');
        ok = socket.write(chunk);
      }
    }
    if (!ok) socket.once('drain', onDrain);
    return ok;
  }

  /** Writes a held head now (the response has no body, or the upstream read ended). */
  flush(): void {
    const head = this.#head;
    if (head === undefined) return;
    this.#head = undefined;
    this.#wrote = true;
    this.#socket.write(head, 'latin1');
  }
}
