/**
 * One HTTP/1.1 socket pool per endpoint: a proxy cluster with `connectionsPerEndpoint: N`
 * under concurrent load never has more than N sockets open to an endpoint, counted where it
 * cannot be wrong — at the upstream servers (sockets accepted and open at once) — and the
 * requests beyond the cap wait for a socket instead of opening another one. HTTP/2 clients and
 * requests node:http serves (`Expect: 100-continue`) of the same cluster share that pool: they
 * used to go through the cluster's own undici pools, a second pool with a second cap.
 */
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { nextLoopbackAddress } from '../support/loopback-pods.js';
import { h2StatusOf, startProxy, statusOf } from './helpers.js';

interface CountingServer {
  readonly key: string;
  accepted: number;
  open: number;
  maxOpen: number;
  hits: number;
  close(): Promise<void>;
}

/** An HTTP/1.1 server that answers after `delayMs` and counts its sockets. */
async function startCounting(delayMs: number): Promise<CountingServer> {
  const address = nextLoopbackAddress();
  const sockets = new Set<Socket>();
  const server = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    s.hits++;
    req.resume();
    req.on('end', () => setTimeout(() => res.end('ok'), delayMs));
  });
  server.on('connection', (sock: Socket) => {
    s.accepted++;
    s.open++;
    s.maxOpen = Math.max(s.maxOpen, s.open);
    sockets.add(sock);
    sock.once('close', () => {
      s.open--;
      sockets.delete(sock);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  const port = (server.address() as AddressInfo).port;
  const s: CountingServer = {
    key: `${address}:${port}`,
    accepted: 0,
    open: 0,
    maxOpen: 0,
    hits: 0,
    close: async () => {
      for (const sock of sockets) sock.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return s;
}

/** A POST with `Expect: 100-continue` (served by the listener's node:http server). */
function expectPost(port: number, agent: http.Agent, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, method: 'POST', agent, headers: { host: 'svc.test', expect: '100-continue' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('continue', () => req.end('body'));
    req.on('error', reject);
  });
}

describe('one HTTP/1.1 pool per endpoint', () => {
  const stop: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const s of stop.splice(0).reverse()) await s();
  });

  /** Two counting upstreams (5 ms answers) behind a round-robin proxy cluster capped at `cap` sockets per endpoint. */
  async function proxyOverTwo(cap: number) {
    const servers = [await startCounting(5), await startCounting(5)];
    stop.push(async () => {
      for (const s of servers) await s.close();
    });
    const proxy: ProxyServer = await startProxy({
      listeners: [{ name: 'main', address: '127.0.0.1:0' }],
      clusters: [
        {
          name: 'svc',
          target: `static:///${servers.map((s) => s.key).join(',')}`,
          policy: 'round-robin',
          connectionsPerEndpoint: cap,
        },
      ],
      routes: [{ hosts: ['svc.test'], cluster: 'svc' }],
    });
    stop.push(() => proxy.close());
    return { servers, proxy, port: proxy.listenerPort('main') as number };
  }

  for (const cap of [1, 3]) {
    test(`connectionsPerEndpoint ${cap}: 24 concurrent clients never open more than ${cap} sockets per endpoint`, async () => {
      const { servers, proxy, port } = await proxyOverTwo(cap);
      const agent = new http.Agent({ keepAlive: true, maxSockets: 24 });
      stop.push(async () => agent.destroy());
      const statuses: number[] = [];
      // 24 clients × 8 requests, bounded by count; each request waits on the previous one.
      await Promise.all(
        Array.from({ length: 24 }, async (_, c) => {
          for (let i = 0; i < 8; i++) statuses.push(await statusOf(port, agent, `/c${c}/r${i}`));
        }),
      );
      expect(statuses.length).toBe(24 * 8);
      expect(statuses.every((s) => s === 200)).toBe(true);
      for (const s of servers) {
        // The load did exceed the cap (requests waited), and the sockets stayed within it.
        expect(s.hits).toBeGreaterThan(cap * 8);
        expect(s.maxOpen).toBeLessThanOrEqual(cap);
        expect(s.accepted).toBeLessThanOrEqual(cap);
      }
      const stats = proxy.clusters.get('svc')?.cluster.stats();
      for (const e of stats?.endpoints ?? []) expect(e.openConnections).toBeLessThanOrEqual(cap);
    });
  }

  test('HTTP/1.1, HTTP/2 and Expect clients together stay within connectionsPerEndpoint 2', async () => {
    const cap = 2;
    const { servers, port } = await proxyOverTwo(cap);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    stop.push(async () => agent.destroy());
    const session = http2.connect(`http://127.0.0.1:${port}`);
    stop.push(async () => {
      session.close();
    });
    const statuses: number[] = [];
    const loops = [
      ...Array.from({ length: 8 }, async (_, c) => {
        for (let i = 0; i < 6; i++) statuses.push(await statusOf(port, agent, `/h1-${c}/r${i}`));
      }),
      ...Array.from({ length: 8 }, async (_, c) => {
        for (let i = 0; i < 6; i++) statuses.push(await h2StatusOf(session, `/h2-${c}/r${i}`));
      }),
      ...Array.from({ length: 4 }, async (_, c) => {
        for (let i = 0; i < 3; i++) statuses.push(await expectPost(port, agent, `/expect-${c}/r${i}`));
      }),
    ];
    await Promise.all(loops);
    expect(statuses.length).toBe(8 * 6 + 8 * 6 + 4 * 3);
    expect(statuses.every((s) => s === 200)).toBe(true);
    for (const s of servers) {
      expect(s.maxOpen).toBeLessThanOrEqual(cap);
      expect(s.accepted).toBeLessThanOrEqual(cap);
    }
  });
});
