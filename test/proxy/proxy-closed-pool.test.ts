/**
 * Regression: a request that reaches a cluster whose upstream pool has closed (a reload
 * retired the cluster, the proxy is shutting down) while the proxy still routes to it got
 * **502 `upstream-error`** — `statusForError` had no case for `EVENLB_CLOSED`, so a pool the
 * proxy closed itself read as a failing upstream. It is **503 `cluster-closed`**: nothing was
 * sent, the client may retry. The same status and reason on every path, in the reply's
 * `x-evenlb-reason`, the gRPC status (14 UNAVAILABLE) and the access log:
 *
 * - an `h2` cluster (`H2SessionPool` closed): an HTTP/2 stream, a gRPC stream and an HTTP/1.1
 *   request forwarded to it;
 * - an `http1` cluster (`Http1Upstream` closed): an HTTP/1.1 request on the proxy's data path,
 *   an HTTP/2 stream forwarded to it and an HTTP/1.0 request (served through node:http);
 * - a whole `ProxyCluster` closed (pools and `Cluster`), of either protocol.
 *
 * Real sockets on loopback: one h2c and one HTTP/1.1 upstream, one proxy listener.
 */
import http from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeProxyConfig } from '../../src/proxy/config/proxy-config.js';
import { ProxyServer } from '../../src/proxy/proxy-server.js';
import { nextLoopbackAddress } from '../support/loopback-pods.js';
import { type Backend, startBackend, waitFor } from './helpers.js';

interface Reply {
  readonly status: number;
  readonly reason: string | undefined;
  readonly grpcStatus?: string | undefined;
}

let h1Backend: Backend;
let h2Backend: http2.Http2Server;
let h2Key = '';
let proxy: ProxyServer;
let port = 0;
const accessLines: Record<string, unknown>[] = [];

beforeAll(async () => {
  h1Backend = await startBackend('h1', nextLoopbackAddress());
  h2Backend = http2.createServer();
  h2Backend.on('stream', (stream) => {
    stream.on('error', () => {});
    stream.resume();
    // With trailers, as a gRPC server answers.
    stream.respond({ ':status': 200 }, { waitForTrailers: true });
    stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end('h2 ok');
  });
  const h2Address = nextLoopbackAddress();
  await new Promise<void>((r) => h2Backend.listen(0, h2Address, r));
  h2Key = `${h2Address}:${(h2Backend.address() as AddressInfo).port}`;
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim() !== '') accessLines.push(JSON.parse(l));
      cb();
    },
  });
  proxy = await ProxyServer.start(
    normalizeProxyConfig({
      accessLog: true,
      listeners: [{ name: 'web', address: '127.0.0.1:0' }],
      clusters: [
        { name: 'grpc', target: `static:///${h2Key}`, protocol: 'h2' },
        { name: 'web', target: `static:///${h1Backend.key}` },
        { name: 'grpc-retired', target: `static:///${h2Key}`, protocol: 'h2' },
        { name: 'web-retired', target: `static:///${h1Backend.key}` },
      ],
      routes: [
        { hosts: ['grpc.test'], cluster: 'grpc' },
        { hosts: ['web.test'], cluster: 'web' },
        { hosts: ['grpc-retired.test'], cluster: 'grpc-retired' },
        { hosts: ['web-retired.test'], cluster: 'web-retired' },
      ],
    }),
    { logger: pino({ level: 'info' }, sink) },
  );
  port = proxy.listenerPort('web') ?? 0;
  expect(port).toBeGreaterThan(0);
});

afterAll(async () => {
  await proxy?.destroy();
  await h1Backend?.close();
  await new Promise<void>((r) => (h2Backend === undefined ? r() : h2Backend.close(() => r())));
});

/** One HTTP/2 stream on a fresh h2c session to the proxy. */
async function h2Request(authority: string, grpc = false): Promise<Reply> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  try {
    return await new Promise<Reply>((resolve, reject) => {
      const headers: http2.OutgoingHttpHeaders = {
        ':method': 'POST',
        ':path': '/echo.Echo/Unary',
        ':authority': authority,
      };
      if (grpc) Object.assign(headers, { 'content-type': 'application/grpc', te: 'trailers' });
      const req = session.request(headers);
      let reply: Reply | undefined;
      req.on('response', (h) => {
        reply = {
          status: Number(h[':status']),
          reason: h['x-evenlb-reason'] as string | undefined,
          grpcStatus: h['grpc-status'] as string | undefined,
        };
      });
      req.on('error', reject);
      req.on('close', () => (reply === undefined ? reject(new Error('no response')) : resolve(reply)));
      req.resume();
      req.end(grpc ? Buffer.alloc(5) : 'body');
    });
  } finally {
    session.close();
  }
}

/** One HTTP/1.1 request on a fresh connection to the proxy. */
function h1Request(host: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method: 'POST', path: '/', agent: false, headers: { host } },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, reason: res.headers['x-evenlb-reason'] as string | undefined }),
        );
      },
    );
    req.on('error', reject);
    req.end('body');
  });
}

/** One HTTP/1.0 request (the proxy serves these through node:http): status line and reason header. */
function h10Request(host: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let raw = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      raw += d;
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.[01] ([0-9]{3})/.exec(raw)?.[1] ?? 0);
      const reason = /\r\nx-evenlb-reason: ([^\r]*)\r\n/i.exec(raw)?.[1];
      resolve({ status, reason });
    });
    socket.write(`GET / HTTP/1.0\r\nHost: ${host}\r\n\r\n`);
  });
}

async function accessLineFor(status: number, cluster: string, count: number): Promise<Record<string, unknown>[]> {
  const lines = () => accessLines.filter((l) => l.access === true && l.status === status && l.cluster === cluster);
  await waitFor(() => lines().length >= count, 5000, `${count} access log lines with status ${status}`);
  return lines();
}

describe('a request reaching a closed upstream pool', () => {
  it('h2 cluster (H2SessionPool closed): 503 cluster-closed for HTTP/2, gRPC and HTTP/1.1 clients', async () => {
    // While the pool is open the route works.
    expect(await h2Request('grpc.test')).toMatchObject({ status: 200 });
    const cluster = proxy.clusters.get('grpc');
    await cluster?.h2?.close();

    expect(await h2Request('grpc.test')).toEqual({ status: 503, reason: 'cluster-closed', grpcStatus: undefined });
    expect(await h2Request('grpc.test', true)).toEqual({ status: 200, reason: 'cluster-closed', grpcStatus: '14' });
    expect(await h1Request('grpc.test')).toEqual({ status: 503, reason: 'cluster-closed' });

    // The gRPC reply is logged with the status it stands for (503), as every local reply is.
    const lines = await accessLineFor(503, 'grpc', 3);
    expect(lines.map((l) => l.reason)).toEqual(['cluster-closed', 'cluster-closed', 'cluster-closed']);
  });

  it('http1 cluster (Http1Upstream closed): the same 503 cluster-closed on every client path', async () => {
    expect(await h1Request('web.test')).toMatchObject({ status: 200 });
    const cluster = proxy.clusters.get('web');
    await cluster?.h1?.close();

    expect(await h1Request('web.test')).toEqual({ status: 503, reason: 'cluster-closed' });
    expect(await h2Request('web.test')).toEqual({ status: 503, reason: 'cluster-closed', grpcStatus: undefined });
    expect(await h10Request('web.test')).toEqual({ status: 503, reason: 'cluster-closed' });

    const lines = await accessLineFor(503, 'web', 3);
    expect(lines.map((l) => l.reason)).toEqual(['cluster-closed', 'cluster-closed', 'cluster-closed']);
  });

  it('a whole cluster closed while still routed (as a reload retires one): the same 503 cluster-closed', async () => {
    expect(await h1Request('grpc-retired.test')).toMatchObject({ status: 200 });
    expect(await h1Request('web-retired.test')).toMatchObject({ status: 200 });
    await proxy.clusters.get('grpc-retired')?.close();
    await proxy.clusters.get('web-retired')?.close();

    expect(await h2Request('grpc-retired.test', true)).toEqual({
      status: 200,
      reason: 'cluster-closed',
      grpcStatus: '14',
    });
    expect(await h1Request('grpc-retired.test')).toEqual({ status: 503, reason: 'cluster-closed' });
    expect(await h1Request('web-retired.test')).toEqual({ status: 503, reason: 'cluster-closed' });
    expect(await h2Request('web-retired.test')).toEqual({
      status: 503,
      reason: 'cluster-closed',
      grpcStatus: undefined,
    });
  });
});
