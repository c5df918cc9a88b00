/**
 * The shared setup of the proxy HTTP/1.1 data-path tests (proxy-http1-path-*.test.ts): an echo
 * `node:http` backend that records what it saw (uploads, big-body hashes, keep-alive sockets,
 * when slow/stalled responses closed), `net` backends that misbehave on purpose (close-delimited,
 * malformed head, dying reused socket), three plain backends, and a proxy routing to each by
 * host, on 127.0.0.161–179. `useHttp1PathProxy()` starts them before a file's tests and closes
 * them after; the bindings below are live once it has run.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { type Backend, startBackend, startProxy } from './helpers.js';
import { BIG_BYTES, bigPiece, CHUNK_BYTES, MiB } from './proxy-http1-raw-client.js';

export interface EchoState {
  kaSockets: Set<net.Socket>;
  uploadBytes: number;
  upload: { bytes: number; sha256: string } | undefined;
  bigSha: Map<string, string>;
  slowClosedAt: number;
  stallClosedAt: number;
}

export const echo: EchoState = {
  kaSockets: new Set(),
  uploadBytes: 0,
  upload: undefined,
  bigSha: new Map(),
  slowClosedAt: 0,
  stallClosedAt: 0,
};

/** Streams 32 MiB to `res` with backpressure; records its hash under `key`. */
export async function streamBig(res: http.ServerResponse, key: string): Promise<void> {
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

export function echoHandler(req: http.IncomingMessage, res: http.ServerResponse): void {
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

export interface RawServer {
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
export async function startRawServer(
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
export let stale: RawServer;
export let trio: Backend[] = [];
let proxy: ProxyServer;
export let port = 0;
export let tightPort = 0;

/** Starts the backends and the proxy before the calling file's tests, closes them after. */
export function useHttp1PathProxy(): void {
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
}
