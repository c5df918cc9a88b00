/**
 * The proxy's own HTTP/1.1 data path, end to end over real sockets: pipelined requests,
 * 32 MiB request and response bodies streamed with backpressure both ways (byte count and
 * SHA-256 on both sides), chunked trailers, close-delimited and HEAD responses, upstream
 * keep-alive reuse, the retry of a bodiless idempotent request whose reused upstream socket
 * died (and no retry for a POST), malformed upstream heads, client aborts reaching the
 * backend, the HTTP/1.0 and `Expect` handoff to node:http, listener idle / head timeouts,
 * the upstream body idle timeout, `Connection: close`, and balance under 50 concurrent
 * keep-alive connections. Clients are raw `net` sockets parsed by hand so every byte the
 * proxy writes is seen; backends are `node:http` servers (or `net` servers for the
 * misbehaving ones) on 127.0.0.161–179.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.js';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { type Backend, shares, startBackend, startProxy, waitFor } from './helpers.js';

const MiB = 1024 * 1024;
const BIG_BYTES = 32 * MiB;
const CHUNK_BYTES = 64 * 1024;

/** A slow reader's pause (what the test models), never a wait for the proxy. */
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A full garbage collection, so RSS samples track live memory rather than collectable socket
 * buffers (three parties in this process read 32 MiB each; V8 collects that garbage late).
 */
function collectGarbage(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

// ---------------------------------------------------------------- a raw HTTP/1.1 client

interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  readonly bodyBytes: number;
  readonly sha256: string;
  readonly trailers: Record<string, string>;
}

interface ReadOptions {
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
class RawConn {
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

function parseFields(lines: readonly string[]): Record<string, string> {
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

function get(host: string, path: string, extra = ''): string {
  return `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`;
}

/** Writes `buf`, waiting for 'drain' when the socket buffer is full. */
async function writeAll(socket: net.Socket, buf: Buffer): Promise<void> {
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
function bigPiece(i: number, bytes = CHUNK_BYTES): Buffer {
  const b = Buffer.allocUnsafe(bytes);
  b.fill((i * 37) & 0xff);
  if (bytes >= 4) b.writeUInt32BE(i, 0);
  return b;
}

// ---------------------------------------------------------------- backends

interface EchoState {
  kaSockets: Set<net.Socket>;
  uploadBytes: number;
  upload: { bytes: number; sha256: string } | undefined;
  bigSha: Map<string, string>;
  slowClosedAt: number;
  stallClosedAt: number;
}

const echo: EchoState = {
  kaSockets: new Set(),
  uploadBytes: 0,
  upload: undefined,
  bigSha: new Map(),
  slowClosedAt: 0,
  stallClosedAt: 0,
};

/** Streams 32 MiB to `res` with backpressure; records its hash under `key`. */
async function streamBig(res: http.ServerResponse, key: string): Promise<void> {
  const hash = createHash('sha256');
  for (let i = 0; i < BIG_BYTES / CHUNK_BYTES; i++) {
    if (res.destroyed) return;
    const piece = bigPiece(i);
    hash.update(piece);
    if (!res.write(piece)) await new Promise<void>((r) => res.once('drain', () => r()));
  }
  echo.bigSha.set(key, hash.digest('hex'));
  res.end();
}

function echoHandler(req: http.IncomingMessage, res: http.ServerResponse): void {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  if (path === '/head') {
    res.writeHead(200, { 'content-length': '1000', 'content-type': 'text/plain' });
    res.end(req.method === 'HEAD' ? undefined : 'h'.repeat(1000));
    return;
  }
  if (path === '/big-cl' || path === '/big-chunked') {
    const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
    if (path === '/big-cl') headers['content-length'] = String(BIG_BYTES);
    res.writeHead(200, headers);
    void streamBig(res, path);
    return;
  }
  if (path === '/trailers') {
    res.writeHead(200, { 'content-type': 'text/plain', trailer: 'x-checksum' });
    res.write('part-one;');
    setTimeout(() => {
      res.write('part-two');
      res.addTrailers({ 'x-checksum': 'c0ffee' });
      res.end();
    }, 20);
    return;
  }
  if (path === '/slow') {
    echo.slowClosedAt = 0;
    res.writeHead(200, { 'content-type': 'text/plain' });
    let n = 0;
    const timer = setInterval(() => {
      if (++n > 50) {
        clearInterval(timer);
        res.end();
        return;
      }
      res.write(`tick ${n}\n`);
    }, 100);
    res.on('close', () => {
      clearInterval(timer);
      echo.slowClosedAt = Date.now();
    });
    return;
  }
  if (path === '/stall') {
    echo.stallClosedAt = 0;
    res.on('close', () => {
      echo.stallClosedAt = Date.now();
    });
    res.writeHead(200, { 'content-length': '100000', 'content-type': 'text/plain' });
    res.write('s'.repeat(1000));
    return; // and nothing more
  }
  if (path === '/upload') {
    // With `x-slow-read`, reads slowly at first (pause, short delay, resume) so the proxy has
    // to hold the client back.
    const slow = req.headers['x-slow-read'] !== undefined;
    const hash = createHash('sha256');
    echo.uploadBytes = 0;
    echo.upload = undefined;
    req.on('data', (c: Buffer) => {
      echo.uploadBytes += c.length;
      hash.update(c);
      if (slow && echo.uploadBytes < 6 * MiB) {
        req.pause();
        setTimeout(() => req.resume(), 5);
      }
    });
    req.on('end', () => {
      echo.upload = { bytes: echo.uploadBytes, sha256: hash.digest('hex') };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(echo.upload));
    });
    return;
  }
  if (path.startsWith('/ka/')) echo.kaSockets.add(req.socket);
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('latin1');
    res.writeHead(200, { 'content-type': 'text/plain', 'x-backend': 'echo' });
    res.end(`${req.method} ${req.url} ${body.length}${body.length > 0 && body.length < 100 ? ` ${body}` : ''}`);
  });
}

interface RawServer {
  readonly server: net.Server;
  readonly key: string;
  /** Request lines received, in order. */
  readonly requests: string[];
  close(): Promise<void>;
}

/**
 * A `net` backend: `onHead(socket, requestLine, index)` is called per request head (index
 * counts requests on that socket, from 0) once its Content-Length body has arrived.
 */
async function startRawServer(
  address: string,
  onHead: (socket: net.Socket, requestLine: string, index: number) => void,
): Promise<RawServer> {
  const sockets = new Set<net.Socket>();
  const requests: string[] = [];
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buf = Buffer.alloc(0);
    let bodyLeft = 0;
    let pendingLine: string | undefined;
    let index = 0;
    socket.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      for (;;) {
        if (pendingLine !== undefined) {
          const n = Math.min(bodyLeft, buf.length);
          bodyLeft -= n;
          buf = buf.subarray(n);
          if (bodyLeft > 0) return;
          const line = pendingLine;
          pendingLine = undefined;
          onHead(socket, line, index++);
          if (socket.destroyed) return;
          continue;
        }
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString('latin1');
        buf = buf.subarray(end + 4);
        const line = head.split('\r\n')[0] ?? '';
        requests.push(line);
        const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head);
        bodyLeft = cl === null ? 0 : Number(cl[1]);
        pendingLine = line;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    key: `${address}:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

// ---------------------------------------------------------------- setup

let echoServer: http.Server;
let echoKey = '';
let closer: RawServer;
let badHead: RawServer;
let stale: RawServer;
let trio: Backend[] = [];
let proxy: ProxyServer;
let port = 0;
let tightPort = 0;

beforeAll(async () => {
  echoServer = http.createServer(echoHandler);
  await new Promise<void>((resolve) => echoServer.listen(0, '127.0.0.161', resolve));
  echoKey = `127.0.0.161:${(echoServer.address() as AddressInfo).port}`;
  closer = await startRawServer('127.0.0.162', (socket) => {
    socket.end('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nclose-delimited body, all of it', 'latin1');
  });
  badHead = await startRawServer('127.0.0.163', (socket) => {
    socket.end('HTTP/1.1 200 OK\r\nBad Header\r\n\r\n', 'latin1');
  });
  // Serves the first request on each socket; a second request on the same socket kills it unanswered.
  stale = await startRawServer('127.0.0.164', (socket, _line, index) => {
    if (index === 0)
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-type: text/plain\r\n\r\nok', 'latin1');
    else socket.destroy();
  });
  trio = await Promise.all([1, 2, 3].map((i) => startBackend(`t${i}`, `127.0.0.${170 + i}`)));
  proxy = await startProxy({
    listeners: [
      { name: 'web', address: '127.0.0.1:0' },
      { name: 'tight', address: '127.0.0.1:0', limits: { idleTimeoutMs: 300, headersTimeoutMs: 300 } },
    ],
    clusters: [
      { name: 'echo', target: `static:///${echoKey}` },
      { name: 'closer', target: `static:///${closer.key}` },
      { name: 'badhead', target: `static:///${badHead.key}` },
      // Outlier detection off: the point here is the retry, not ejecting the only endpoint.
      { name: 'stale', target: `static:///${stale.key}`, outlierDetection: false },
      { name: 'stall', target: `static:///${echoKey}`, bodyTimeoutMs: 300 },
      { name: 'trio', target: `static:///${trio.map((b) => b.key).join(',')}` },
    ],
    routes: [
      { hosts: ['echo.test'], cluster: 'echo' },
      { hosts: ['closer.test'], cluster: 'closer' },
      { hosts: ['badhead.test'], cluster: 'badhead' },
      { hosts: ['stale.test'], cluster: 'stale' },
      { hosts: ['stall.test'], cluster: 'stall' },
      { hosts: ['trio.test'], cluster: 'trio' },
      { hosts: ['*'], cluster: 'echo' },
    ],
  });
  port = proxy.listenerPort('web') as number;
  tightPort = proxy.listenerPort('tight') as number;
});

afterAll(async () => {
  await proxy?.close();
  echoServer?.closeAllConnections();
  await new Promise<void>((resolve) => (echoServer ? echoServer.close(() => resolve()) : resolve()));
  await Promise.all([closer?.close(), badHead?.close(), stale?.close(), ...trio.map((b) => b.close())]);
});

// ---------------------------------------------------------------- tests

describe('proxy HTTP/1.1 data path', () => {
  it('answers 5 pipelined GETs (one write) in order and keeps the connection open', async () => {
    const c = await RawConn.open(port);
    try {
      c.write([1, 2, 3, 4, 5].map((i) => get('echo.test', `/pipe/${i}`)).join(''));
      for (let i = 1; i <= 5; i++) {
        const r = await c.read();
        expect(r.status).toBe(200);
        expect(r.body.toString()).toBe(`GET /pipe/${i} 0`);
      }
      expect(c.closed).toBe(false);
      c.write(get('echo.test', '/pipe/6'));
      const r6 = await c.read();
      expect(r6.body.toString()).toBe('GET /pipe/6 0');
    } finally {
      c.destroy();
    }
  });

  it('streams a 32 MiB Content-Length upload with backpressure, and a many-chunk chunked upload, intact', async () => {
    const c = await RawConn.open(port);
    try {
      c.write(
        `POST /upload HTTP/1.1\r\nHost: echo.test\r\nX-Slow-Read: 1\r\nContent-Type: application/octet-stream\r\nContent-Length: ${BIG_BYTES}\r\n\r\n`,
      );
      const hash = createHash('sha256');
      let sent = 0;
      // The proxy, client and backend share this process, so RSS also carries the garbage of
      // the test's own buffers; the bound is loose on purpose. A proxy that buffered the body
      // instead of pausing the client would add ~32 MiB. The tighter signal is the gap between
      // what the client has written and what the backend has read: kernel socket buffers
      // (two hops) plus whatever the proxy holds.
      const gc = collectGarbage();
      gc();
      const rssBefore = process.memoryUsage().rss;
      let rssMax = rssBefore;
      let maxGap = 0;
      const sampler = setInterval(() => {
        rssMax = Math.max(rssMax, process.memoryUsage().rss);
        maxGap = Math.max(maxGap, sent - echo.uploadBytes);
      }, 10);
      try {
        for (let i = 0; i < BIG_BYTES / CHUNK_BYTES; i++) {
          const piece = bigPiece(i);
          hash.update(piece);
          sent += piece.length;
          await writeAll(c.socket, piece);
          if (sent % (2 * MiB) === 0) gc();
        }
        const r = await c.read({ timeoutMs: 20_000 });
        expect(r.status).toBe(200);
        expect(JSON.parse(r.body.toString())).toEqual({ bytes: BIG_BYTES, sha256: hash.digest('hex') });
      } finally {
        clearInterval(sampler);
      }
      expect(maxGap).toBeLessThan(24 * MiB);
      expect(rssMax - rssBefore).toBeLessThan(24 * MiB);

      // Chunked: 1500 chunks of seeded sizes (1 B – 8 KiB), written in groups of uneven size.
      const random = new SeededRandom(161);
      const chash = createHash('sha256');
      let total = 0;
      c.write('POST /upload HTTP/1.1\r\nHost: echo.test\r\nTransfer-Encoding: chunked\r\n\r\n');
      let group: Buffer[] = [];
      for (let i = 0; i < 1500; i++) {
        const size = 1 + Math.floor(random.next() * 8192);
        const data = bigPiece(i, size);
        chash.update(data);
        total += size;
        group.push(Buffer.from(`${size.toString(16)}\r\n`, 'latin1'), data, Buffer.from('\r\n', 'latin1'));
        if (group.length >= 3 * (1 + Math.floor(random.next() * 6))) {
          await writeAll(c.socket, Buffer.concat(group));
          group = [];
        }
      }
      group.push(Buffer.from('0\r\n\r\n', 'latin1'));
      await writeAll(c.socket, Buffer.concat(group));
      const r2 = await c.read({ timeoutMs: 20_000 });
      expect(r2.status).toBe(200);
      expect(JSON.parse(r2.body.toString())).toEqual({ bytes: total, sha256: chash.digest('hex') });
    } finally {
      c.destroy();
    }
  });

  it('delivers 32 MiB responses (Content-Length and chunked) intact to a slow reader', async () => {
    const c = await RawConn.open(port);
    try {
      for (const path of ['/big-cl', '/big-chunked']) {
        echo.bigSha.delete(path);
        c.write(get('echo.test', path));
        const r = await c.read({ keepBody: false, slowBytes: 4 * MiB, slowDelayMs: 3, timeoutMs: 25_000 });
        expect(r.status).toBe(200);
        if (path === '/big-cl') expect(r.headers['content-length']).toBe(String(BIG_BYTES));
        else expect(r.headers['transfer-encoding']).toBe('chunked');
        expect(r.bodyBytes).toBe(BIG_BYTES);
        expect(r.sha256).toBe(echo.bigSha.get(path));
      }
      expect(c.closed).toBe(false);
    } finally {
      c.destroy();
    }
  });

  it('passes a chunked response with trailers through', async () => {
    const c = await RawConn.open(port);
    try {
      c.write(get('echo.test', '/trailers'));
      const r = await c.read();
      expect(r.status).toBe(200);
      expect(r.headers['transfer-encoding']).toBe('chunked');
      expect(r.body.toString()).toBe('part-one;part-two');
      expect(r.trailers['x-checksum']).toBe('c0ffee');
    } finally {
      c.destroy();
    }
  });

  it('forwards a close-delimited upstream response with connection: close, then closes', async () => {
    const c = await RawConn.open(port);
    try {
      c.write(get('closer.test', '/x'));
      const r = await c.read();
      expect(r.status).toBe(200);
      expect(r.body.toString()).toBe('close-delimited body, all of it');
      expect(r.headers.connection).toBe('close');
      expect(await c.waitClosed(3000)).toBe(true);
    } finally {
      c.destroy();
    }
  });

  it('answers HEAD (content-length: 1000, no body) and then a GET on the same connection', async () => {
    const c = await RawConn.open(port);
    try {
      c.write('HEAD /head HTTP/1.1\r\nHost: echo.test\r\n\r\n');
      const h = await c.read({ head: true, timeoutMs: 3000 });
      expect(h.status).toBe(200);
      expect(h.headers['content-length']).toBe('1000');
      // Nothing of a body may follow a HEAD response: the next bytes on the connection are
      // the next response's head.
      expect(c.buffered).toBe(0);
      c.write(get('echo.test', '/after-head'));
      const g = await c.read();
      expect(g.status).toBe(200);
      expect(g.body.toString()).toBe('GET /after-head 0');
    } finally {
      c.destroy();
    }
  });

  it('reuses upstream keep-alive sockets: 200 sequential requests use at most 2 backend sockets', async () => {
    echo.kaSockets.clear();
    const c = await RawConn.open(port);
    try {
      const deadline = Date.now() + 15_000;
      for (let i = 0; i < 200 && Date.now() < deadline; i++) {
        c.write(get('echo.test', `/ka/${i}`));
        const r = await c.read();
        expect(r.status).toBe(200);
        expect(r.body.toString()).toBe(`GET /ka/${i} 0`);
      }
      expect(echo.kaSockets.size).toBeGreaterThanOrEqual(1);
      expect(echo.kaSockets.size).toBeLessThanOrEqual(2);
    } finally {
      c.destroy();
    }
  });

  it('retries bodiless GETs whose reused upstream socket died, but not a POST with a body', async () => {
    stale.requests.length = 0;
    const c = await RawConn.open(port);
    try {
      for (let i = 0; i < 4; i++) {
        c.write(get('stale.test', `/g${i}`));
        const r = await c.read();
        expect(r.status, `GET /g${i}`).toBe(200);
        expect(r.body.toString()).toBe('ok');
      }
      // Every GET after the first hit a reused socket first, then a fresh one.
      expect(stale.requests.filter((l) => l.startsWith('GET')).length).toBe(7);
      c.write('POST /p HTTP/1.1\r\nHost: stale.test\r\nContent-Length: 5\r\n\r\nhello');
      const p = await c.read();
      expect(p.status).toBe(502);
      expect(p.headers['x-evenlb-reason']).toBeDefined();
      // The 502 came after the proxy gave up: a retry would have been sent before it.
      await waitFor(() => stale.requests.some((l) => l.startsWith('POST')), 3000, 'the POST at the backend');
      expect(stale.requests.filter((l) => l.startsWith('POST')).length).toBe(1);
    } finally {
      c.destroy();
    }
  });

  it('answers 502 upstream-error for a malformed upstream response head', async () => {
    const c = await RawConn.open(port);
    try {
      c.write(get('badhead.test', '/'));
      const r = await c.read();
      expect(r.status).toBe(502);
      expect(r.headers['x-evenlb-reason']).toBe('upstream-error');
    } finally {
      c.destroy();
    }
  });

  it('closes the backend response when the client goes away mid-response', async () => {
    const c = await RawConn.open(port);
    c.write(get('echo.test', '/slow'));
    // Wait for the head and at least one tick, then vanish.
    await waitFor(() => c.buffered > 0, 5000, 'the first bytes of the slow response');
    const first = c.buffered;
    await waitFor(() => c.buffered > first, 5000, 'another tick of the slow response');
    expect(echo.slowClosedAt).toBe(0);
    const goneAt = Date.now();
    c.destroy();
    await waitFor(() => echo.slowClosedAt > 0, 3000, 'the backend response to close');
    expect(echo.slowClosedAt - goneAt).toBeLessThan(1000);
  });

  it('serves HTTP/1.0 (no Host; through node:http) and Expect: 100-continue requests', async () => {
    const a = await RawConn.open(port);
    try {
      a.write('GET /h10 HTTP/1.0\r\n\r\n');
      const r = await a.read();
      expect(r.status).toBe(200);
      expect(r.body.toString()).toBe('GET /h10 0');
    } finally {
      a.destroy();
    }
    const b = await RawConn.open(port);
    try {
      b.write('POST /expect HTTP/1.1\r\nHost: echo.test\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n');
      const interim = await b.read({ timeoutMs: 3000 });
      expect(interim.status).toBe(100);
      b.write('hello');
      const r = await b.read();
      expect(r.status).toBe(200);
      expect(r.body.toString()).toBe('POST /expect 5 hello');
    } finally {
      b.destroy();
    }
  });

  it('closes an idle keep-alive connection (idleTimeoutMs: 300) and answers half a head with 408 (headersTimeoutMs: 300)', async () => {
    const idle = await RawConn.open(tightPort);
    try {
      idle.write(get('echo.test', '/before-idle'));
      expect((await idle.read()).status).toBe(200);
      expect(await idle.waitClosed(1500)).toBe(true);
    } finally {
      idle.destroy();
    }
    const half = await RawConn.open(tightPort);
    try {
      half.write('GET /half HTTP/1.1\r\nHost: echo.test\r\n');
      const r = await half.read({ timeoutMs: 2000 });
      expect(r.status).toBe(408);
      expect(await half.waitClosed(1500)).toBe(true);
    } finally {
      half.destroy();
    }
  });

  it('cuts the client and the backend when the upstream body stalls past bodyTimeoutMs', async () => {
    const c = await RawConn.open(port);
    try {
      c.write(get('stall.test', '/stall'));
      await waitFor(() => c.buffered >= 1000, 5000, 'the head and first body bytes');
      const stalledAt = Date.now();
      expect(await c.waitClosed(2500)).toBe(true);
      expect(Date.now() - stalledAt).toBeLessThan(1500);
      await waitFor(() => echo.stallClosedAt > 0, 2000, 'the backend socket to close');
    } finally {
      c.destroy();
    }
  });

  it('answers a pipelined request that follows a refused one (404) on the same connection', async () => {
    const c = await RawConn.open(port);
    try {
      c.write(
        `GET http://elsewhere.example/x HTTP/1.1\r\nHost: elsewhere.example\r\n\r\n${get('echo.test', '/after')}`,
      );
      const refused = await c.read();
      expect(refused.status).toBe(404);
      const next = await c.read();
      expect(next.status).toBe(200);
      expect(next.body.toString()).toBe('GET /after 0');
    } finally {
      c.destroy();
    }
  });

  it('gives up a request whose client half-closes before the body is complete', async () => {
    const c = await RawConn.open(port);
    echo.uploadBytes = 0;
    c.write('POST /upload HTTP/1.1\r\nHost: echo.test\r\nContent-Length: 1000\r\n\r\n0123456789');
    await waitFor(() => echo.uploadBytes === 10, 5000, 'the partial body at the backend');
    c.socket.end();
    await waitFor(() => c.closed, 3000, 'the proxy to close the connection');
  });

  it('honours Connection: close: connection: close in the response, then the socket closes', async () => {
    const c = await RawConn.open(port);
    try {
      c.write(get('echo.test', '/bye', 'Connection: close\r\n'));
      const r = await c.read();
      expect(r.status).toBe(200);
      expect(r.body.toString()).toBe('GET /bye 0');
      expect(r.headers.connection).toBe('close');
      expect(await c.waitClosed(3000)).toBe(true);
    } finally {
      c.destroy();
    }
  });

  it('balances 50 concurrent keep-alive connections × 20 requests over 3 backends (33% ± 8%)', async () => {
    for (const b of trio) b.hits = 0;
    const deadline = Date.now() + 20_000;
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: 50 }, async (_, k) => {
        const c = await RawConn.open(port);
        try {
          for (let i = 0; i < 20 && Date.now() < deadline; i++) {
            c.write(get('trio.test', `/c${k}/r${i}`));
            statuses.push((await c.read()).status);
          }
        } finally {
          c.destroy();
        }
      }),
    );
    expect(statuses.length).toBe(1000);
    expect(statuses.every((s) => s === 200)).toBe(true);
    for (const share of shares(trio)) {
      expect(share).toBeGreaterThan(1 / 3 - 0.08);
      expect(share).toBeLessThan(1 / 3 + 0.08);
    }
  });
});
