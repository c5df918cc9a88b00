/**
 * A raw HTTP/1.1 client for the proxy data-path tests: a `net` socket with a hand-written
 * response parser (so every byte the proxy writes is seen, including what follows a HEAD
 * response), slow-reader pauses, and helpers to write request bytes with backpressure and build
 * deterministic big bodies.
 */
import { createHash } from 'node:crypto';
import net from 'node:net';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

export const MiB = 1024 * 1024;
export const BIG_BYTES = 32 * MiB;
export const CHUNK_BYTES = 64 * 1024;

/** A slow reader's pause (what the test models), never a wait for the proxy. */
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A full garbage collection, so RSS samples track live memory rather than collectable socket
 * buffers (three parties in this process read 32 MiB each; V8 collects that garbage late).
 */
export function collectGarbage(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

// ---------------------------------------------------------------- a raw HTTP/1.1 client

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  readonly bodyBytes: number;
  readonly sha256: string;
  readonly trailers: Record<string, string>;
}

export interface ReadOptions {
  /** The request was HEAD: no body whatever the headers say. */
  readonly head?: boolean;
  readonly timeoutMs?: number;
  /** Keep the body bytes (default true; false for big bodies: only count and hash). */
  readonly keepBody?: boolean;
  /** Read slowly: sleep `slowDelayMs` after each piece (≤ 64 KiB) of the first `slowBytes`. */
  readonly slowBytes?: number;
  readonly slowDelayMs?: number;
}

/** A client socket with a hand-written response parser; it stops reading past 1 MiB buffered. */
export class RawConn {
  readonly socket: net.Socket;
  closed = false;
  #buf: Buffer = Buffer.alloc(0);
  #ended = false;
  #wake: (() => void) | undefined;

  static open(port: number): Promise<RawConn> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => resolve(new RawConn(socket)));
      socket.once('error', reject);
    });
  }

  constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (c: Buffer) => {
      this.#buf = this.#buf.length === 0 ? c : Buffer.concat([this.#buf, c]);
      if (this.#buf.length >= MiB) socket.pause();
      this.#poke();
    });
    socket.on('end', () => {
      this.#ended = true;
      this.#poke();
    });
    socket.on('close', () => {
      this.#ended = true;
      this.closed = true;
      this.#poke();
    });
    socket.on('error', () => {});
  }

  write(data: string | Buffer): boolean {
    return typeof data === 'string' ? this.socket.write(data, 'latin1') : this.socket.write(data);
  }

  /** Bytes received and not parsed yet. */
  get buffered(): number {
    return this.#buf.length;
  }

  destroy(): void {
    this.socket.destroy();
  }

  #poke(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }

  /** Waits for more bytes or the end of the stream; false when the stream had already ended. */
  async #more(deadline: number): Promise<boolean> {
    if (this.#ended) return false;
    this.socket.resume();
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(
        () => {
          this.#wake = undefined;
          reject(new Error('timed out waiting for bytes from the proxy'));
        },
        Math.max(1, deadline - Date.now()),
      );
      this.#wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
    return true;
  }

  #take(n: number): Buffer {
    const out = this.#buf.subarray(0, n);
    this.#buf = this.#buf.subarray(n);
    if (this.#buf.length < MiB) this.socket.resume();
    return out;
  }

  async #line(deadline: number): Promise<string> {
    for (;;) {
      const i = this.#buf.indexOf('\r\n');
      if (i >= 0) {
        const line = this.#take(i).toString('latin1');
        this.#take(2);
        return line;
      }
      if (!(await this.#more(deadline))) throw new Error('connection closed in the middle of a line');
    }
  }

  /** Resolves when the proxy has closed the connection (true) or after `timeoutMs` (false). */
  async waitClosed(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.#ended) {
      try {
        await this.#more(deadline);
      } catch {
        return false;
      }
      // Drop whatever arrives meanwhile so the socket keeps flowing.
      this.#take(this.#buf.length);
    }
    return true;
  }

  /** Reads one response (an interim 1xx is returned as its own response). */
  async read(options: ReadOptions = {}): Promise<RawResponse> {
    const deadline = Date.now() + (options.timeoutMs ?? 10_000);
    let headEnd = this.#buf.indexOf('\r\n\r\n');
    while (headEnd < 0) {
      if (!(await this.#more(deadline))) {
        throw new Error(`connection closed before a response head (got ${JSON.stringify(this.#buf.toString())})`);
      }
      headEnd = this.#buf.indexOf('\r\n\r\n');
    }
    const lines = this.#take(headEnd + 4)
      .toString('latin1')
      .slice(0, headEnd)
      .split('\r\n');
    const status = Number((lines[0] ?? '').split(' ')[1]);
    const headers = parseFields(lines.slice(1));
    const keep = options.keepBody ?? true;
    const kept: Buffer[] = [];
    const hash = createHash('sha256');
    let bodyBytes = 0;
    const slowBytes = options.slowBytes ?? 0;
    const sink = async (part: Buffer): Promise<void> => {
      bodyBytes += part.length;
      hash.update(part);
      if (keep) kept.push(Buffer.from(part));
      if (bodyBytes <= slowBytes) await sleep(options.slowDelayMs ?? 2);
    };
    const exactly = async (n: number): Promise<void> => {
      let left = n;
      while (left > 0) {
        if (this.#buf.length === 0 && !(await this.#more(deadline))) {
          throw new Error(`connection closed with ${left} body bytes missing`);
        }
        const piece = Math.min(left, this.#buf.length, CHUNK_BYTES);
        if (piece === 0) continue;
        left -= piece;
        await sink(this.#take(piece));
      }
    };
    const trailers: Record<string, string> = {};
    const noBody = options.head === true || status < 200 || status === 204 || status === 304;
    if (noBody) {
      // nothing
    } else if ((headers['transfer-encoding'] ?? '').toLowerCase() === 'chunked') {
      for (;;) {
        const size = Number.parseInt((await this.#line(deadline)).split(';')[0] ?? '', 16);
        if (!Number.isFinite(size)) throw new Error('malformed chunk size from the proxy');
        if (size === 0) break;
        await exactly(size);
        if ((await this.#line(deadline)) !== '') throw new Error('chunk not followed by CRLF');
      }
      const fields: string[] = [];
      for (;;) {
        const line = await this.#line(deadline);
        if (line === '') break;
        fields.push(line);
      }
      Object.assign(trailers, parseFields(fields));
    } else if (headers['content-length'] !== undefined) {
      await exactly(Number(headers['content-length']));
    } else {
      // Close-delimited.
      for (;;) {
        if (this.#buf.length > 0) {
          await sink(this.#take(Math.min(this.#buf.length, CHUNK_BYTES)));
          continue;
        }
        if (!(await this.#more(deadline))) break;
      }
    }
    return { status, headers, body: Buffer.concat(kept), bodyBytes, sha256: hash.digest('hex'), trailers };
  }
}

export function parseFields(lines: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    if (i <= 0) continue;
    const name = line.slice(0, i).trim().toLowerCase();
    const value = line.slice(i + 1).trim();
    out[name] = out[name] === undefined ? value : `${out[name]}, ${value}`;
  }
  return out;
}

export function get(host: string, path: string, extra = ''): string {
  return `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`;
}

/** Writes `buf`, waiting for 'drain' when the socket buffer is full. */
export async function writeAll(socket: net.Socket, buf: Buffer): Promise<void> {
  if (socket.write(buf)) return;
  await new Promise<void>((resolve, reject) => {
    const onDrain = (): void => {
      socket.off('close', onClose);
      resolve();
    };
    const onClose = (): void => {
      socket.off('drain', onDrain);
      reject(new Error('socket closed while writing'));
    };
    socket.once('drain', onDrain);
    socket.once('close', onClose);
  });
}

/** The i-th 64 KiB piece of a big body: a cheap deterministic pattern, a fresh buffer each time. */
export function bigPiece(i: number, bytes = CHUNK_BYTES): Buffer {
  const b = Buffer.allocUnsafe(bytes);
  b.fill((i * 37) & 0xff);
  if (bytes >= 4) b.writeUInt32BE(i, 0);
  return b;
}
