/**
 * An `h2` cluster's deadlines on every client protocol: an upstream that accepts a stream and
 * never answers gets the client a 504 `upstream-timeout` within the cluster's
 * `requestTimeoutMs` (gRPC clients: `grpc-status` 4, DEADLINE_EXCEEDED) — HTTP/1.1, HTTP/1.0,
 * h2c and gRPC alike; a response body that stalls after its head is cut by `bodyTimeoutMs`.
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { startProxy } from './helpers.js';
import { ask, CLIENT_PROTOCOLS } from './protocol-clients.js';

const REQUEST_TIMEOUT_MS = 500;
const BODY_TIMEOUT_MS = 500;
/** Generous on a loaded machine; without the deadline nothing ends at all. */
const BOUND_MS = 6000;

let upstream: http2.Http2Server;
let proxy: ProxyServer;
let port = 0;
const streams = new Set<http2.ServerHttp2Stream>();

beforeAll(async () => {
  upstream = http2.createServer();
  upstream.on('stream', (stream, headers) => {
    streams.add(stream);
    stream.on('error', () => {});
    stream.once('close', () => streams.delete(stream));
    stream.resume();
    if (headers[':path'] === '/stall') {
      stream.respond({ ':status': 200 });
      stream.write('part');
    }
    // '/hang': never answers.
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.91', r));
  const key = `127.0.0.91:${(upstream.address() as AddressInfo).port}`;
  proxy = await startProxy({
    listeners: [{ name: 'web', address: '127.0.0.1:0' }],
    clusters: [
      {
        name: 'h2',
        target: `static:///${key}`,
        protocol: 'h2',
        requestTimeoutMs: REQUEST_TIMEOUT_MS,
        bodyTimeoutMs: BODY_TIMEOUT_MS,
        retries: { idempotent: 0 },
      },
    ],
    routes: [{ hosts: ['h2.test'], cluster: 'h2' }],
  });
  port = proxy.listenerPort('web') as number;
});

afterAll(async () => {
  await proxy?.close();
  for (const s of streams) s.destroy();
  await new Promise<void>((r) => upstream.close(() => r()));
});

describe('h2 cluster: request deadline', () => {
  for (const protocol of CLIENT_PROTOCOLS) {
    it(`${protocol}: a hanging upstream gets 504 upstream-timeout within the deadline`, async () => {
      const a = await ask(protocol, port, 'h2.test', '/hang', BOUND_MS);
      if (protocol === 'gRPC')
        expect({ grpcStatus: a.grpcStatus, reason: a.reason }).toEqual({ grpcStatus: '4', reason: 'upstream-timeout' });
      else expect({ status: a.status, reason: a.reason }).toEqual({ status: 504, reason: 'upstream-timeout' });
      expect(a.outcome).toBe('complete');
      expect(a.elapsedMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    });
  }
});

describe('h2 cluster: body deadline', () => {
  for (const protocol of ['HTTP/1.1', 'h2c'] as const) {
    it(`${protocol}: a response body that stalls after its head is cut`, async () => {
      const a = await ask(protocol, port, 'h2.test', '/stall', BOUND_MS);
      expect(a.status).toBe(200);
      expect(a.body).toBe('part');
      expect(a.outcome).toBe('cut');
      expect(a.elapsedMs).toBeGreaterThanOrEqual(BODY_TIMEOUT_MS - 50);
    });
  }
});
