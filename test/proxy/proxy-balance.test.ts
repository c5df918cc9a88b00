/**
 * Per-request balancing through the proxy: 3 keep-alive HTTP/1.1 connections, and one HTTP/2
 * connection carrying 100 concurrent streams, spread over 4 backends on their own loopback
 * addresses; each backend must get 25% ± 3% of the requests. Also checks forwarding headers.
 *
 * The cluster's policy is round-robin, a plain rotation with no random draw while no endpoint
 * pushes back: over n requests each backend's share is within 1/n of 25%, so REQUESTS = 1,000
 * (0.1%) leaves the ±3% for what the test is about — requests, not connections, being spread.
 */
import http from 'node:http';
import http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { type Backend, shares, startBackend, startProxy, waitFor } from './helpers.js';

let backends: Backend[] = [];
let proxy: ProxyServer;
let port = 0;
/** Requests per test (see above for why 1,000 are enough). */
const REQUESTS = 1000;

beforeAll(async () => {
  backends = await Promise.all([1, 2, 3, 4].map((i) => startBackend(`b${i}`, `127.0.0.${10 + i}`)));
  proxy = await startProxy({
    listeners: [{ name: 'web', address: '127.0.0.1:0', protocol: 'http' }],
    clusters: [
      {
        name: 'web',
        target: `static:///${backends.map((b) => b.key).join(',')}`,
        policy: 'round-robin',
      },
    ],
  });
  port = proxy.listenerPort('web') as number;
});

afterAll(async () => {
  await proxy?.close();
  await Promise.all(backends.map((b) => b.close()));
});

function reset(): void {
  for (const b of backends) b.hits = 0;
}

function get(
  agent: http.Agent,
  path = '/',
): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, agent, headers: { host: 'svc.example' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('proxy balancing', () => {
  // Three connections over four backends: a proxy that picked a backend per connection would
  // leave one backend with nothing (and give the others a third each), so only per-request
  // balancing passes — with 8 (a multiple of 4) per-connection picks could also read 25% each.
  it('spreads the requests of 3 keep-alive HTTP/1.1 connections evenly over 4 backends (25% ± 3%)', async () => {
    reset();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 3 });
    const deadline = Date.now() + 15_000;
    let sent = 0;
    const worker = async (): Promise<void> => {
      while (sent < REQUESTS && Date.now() < deadline) {
        sent++;
        const r = await get(agent);
        expect(r.status).toBe(200);
      }
    };
    await Promise.all(Array.from({ length: 3 }, worker));
    agent.destroy();
    const s = shares(backends);
    for (const share of s) expect(Math.abs(share - 0.25)).toBeLessThanOrEqual(0.03);
    expect(backends.reduce((a, b) => a + b.hits, 0)).toBeGreaterThanOrEqual(400);
  });

  it('spreads 100 concurrent streams on one HTTP/2 connection evenly over 4 backends', async () => {
    reset();
    const session = http2.connect(`http://127.0.0.1:${port}`);
    const one = (): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = session.request({ ':path': '/h2', ':authority': 'svc.example' });
        let status = 0;
        req.on('response', (h) => (status = Number(h[':status'])));
        req.on('data', () => {});
        req.on('end', () => resolve(status));
        req.on('error', reject);
        req.end();
      });
    const deadline = Date.now() + 15_000;
    let sent = 0;
    const stream = async (): Promise<void> => {
      while (sent < REQUESTS && Date.now() < deadline) {
        sent++;
        expect(await one()).toBe(200);
      }
    };
    await Promise.all(Array.from({ length: 100 }, stream));
    session.close();
    const s = shares(backends);
    for (const share of s) expect(Math.abs(share - 0.25)).toBeLessThanOrEqual(0.03);
  });

  it('adds forwarding headers and strips hop-by-hop ones', async () => {
    const agent = new http.Agent({ keepAlive: false });
    const r = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          path: '/hdr',
          agent,
          headers: {
            host: 'svc.example:8080',
            connection: 'close, x-secret',
            'x-secret': 'drop me',
            'keep-alive': 'timeout=5',
            te: 'trailers, deflate',
            'proxy-authorization': 'Basic eA==',
            'x-forwarded-for': '10.9.9.9',
            'x-keep': 'yes',
          },
        },
        resolve,
      );
      req.on('error', reject);
      req.end();
    });
    r.resume();
    const seen = backends.map((b) => b.lastHeaders).find((h) => h?.['x-keep'] === 'yes');
    expect(seen).toBeDefined();
    expect(seen?.['x-secret']).toBeUndefined();
    expect(seen?.['keep-alive']).toBeUndefined();
    expect(seen?.['proxy-authorization']).toBeUndefined();
    expect(seen?.te).toBe('trailers');
    expect(seen?.host).toBe('svc.example:8080');
    // The listener does not trust client-sent forwarding headers (the default): replaced.
    expect(seen?.['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen?.['x-forwarded-proto']).toBe('http');
    expect(seen?.['x-forwarded-host']).toBe('svc.example:8080');
    expect(seen?.via).toBe('1.1 evenlb');
    expect(r.headers.via).toBe('1.1 evenlb');
  });
});

describe('access log', () => {
  it('writes one JSON line per request when accessLog is on', async () => {
    const { Writable } = await import('node:stream');
    const { pino } = await import('pino');
    const { ProxyServer } = await import('../../src/proxy/proxy-server.js');
    const { normalizeProxyConfig } = await import('../../src/proxy/config/proxy-config.js');
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const l of chunk.toString('utf8').split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l));
        cb();
      },
    });
    const logged = await ProxyServer.start(
      normalizeProxyConfig({
        accessLog: true,
        listeners: [{ name: 'logged', address: '127.0.0.1:0' }],
        clusters: [{ name: 'web', target: `static:///${backends[0]?.key}` }],
      }),
      { logger: pino({ level: 'info' }, sink) },
    );
    try {
      const agent = new http.Agent({ keepAlive: false });
      await new Promise<void>((resolve, reject) =>
        http
          .get({ host: '127.0.0.1', port: logged.listenerPort('logged'), path: '/logged?x=1', agent }, (r) => {
            r.resume();
            r.on('end', resolve);
          })
          .on('error', reject),
      );
      await waitFor(() => lines.some((l) => l.access === true), 2000, 'access log line');
      const line = lines.find((l) => l.access === true);
      expect(line).toMatchObject({
        method: 'GET',
        path: '/logged?x=1',
        status: 200,
        cluster: 'web',
        listener: 'logged',
      });
      expect(typeof line?.durationMs).toBe('number');
    } finally {
      await logged.close();
    }
  });
});
