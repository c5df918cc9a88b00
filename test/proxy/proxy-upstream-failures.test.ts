/**
 * Upstream failures behind the proxy: an endpoint that refuses connections costs no request
 * (the connect failure is retried on another endpoint), and an endpoint that keeps answering
 * 5xx is ejected by passive outlier detection — it gets no further requests and the ejection
 * shows in the metrics.
 */
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { type Backend, fetchText, startBackend, startProxy } from './helpers.js';

let good: Backend[] = [];
let bad: Backend;
let refusedKey = '';
let proxy: ProxyServer;
let silent: Backend;

function get(port: number, agent: http.Agent, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/', agent, headers: { host } }, (r) => {
        r.resume();
        r.on('end', () => resolve(r.statusCode ?? 0));
      })
      .on('error', reject);
  });
}

beforeAll(async () => {
  good = await Promise.all([1, 2].map((i) => startBackend(`ok${i}`, `127.0.0.${120 + i}`)));
  bad = await startBackend('bad', '127.0.0.125', {
    handler: (_req, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('overloaded\n');
    },
  });
  silent = await startBackend('silent', '127.0.0.127', { handler: () => {} });
  // A port nobody listens on: take one and close it.
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.126', r));
  refusedKey = `127.0.0.126:${(probe.address() as net.AddressInfo).port}`;
  await new Promise<void>((r) => probe.close(() => r()));
  proxy = await startProxy({
    admin: { address: '127.0.0.1:0' },
    listeners: [
      { name: 'refused', address: '127.0.0.1:0' },
      { name: 'refused-lr', address: '127.0.0.1:0' },
      { name: 'outlier', address: '127.0.0.1:0' },
    ],
    clusters: [
      {
        name: 'refused',
        target: `static:///${[...good.map((b) => b.key), refusedKey].join(',')}`,
        policy: 'round-robin',
      },
      {
        // least-request with no ejection: after a refused connect the failed endpoint is as
        // idle as any, so only the retry's exclusion keeps it from being picked again.
        name: 'refused-lr',
        target: `static:///${[...good.map((b) => b.key), refusedKey].join(',')}`,
        policy: 'least-request',
        outlierDetection: { consecutiveFailures: 100_000 },
      },
      {
        name: 'outlier',
        target: `static:///${[...good.map((b) => b.key), bad.key].join(',')}`,
        policy: 'round-robin',
        outlierDetection: { consecutiveFailures: 3, baseEjectionMs: 60_000 },
        // 503 is also pushback: with the penalty (on by default) round robin skips the 503
        // endpoint's turn with probability 1 − 1/penalty (10 right after each 503, fading to 1
        // over 5 s), drawn from an unseeded random, so in about 1 run in 20 it got only 1 or 2
        // attempts in the 90 requests and was never ejected (its errors always equalled its
        // attempts). Without the penalty it keeps its turns until ejected, after exactly 3.
        pushback: false,
      },
      { name: 'slow', target: `static:///${silent.key}`, requestTimeoutMs: 300, retries: { idempotent: 0 } },
    ],
    routes: [
      { hosts: ['refused.test'], cluster: 'refused' },
      { hosts: ['refused-lr.test'], cluster: 'refused-lr' },
      { hosts: ['outlier.test'], cluster: 'outlier' },
      { hosts: ['slow.test'], cluster: 'slow' },
    ],
  });
});

afterAll(async () => {
  await proxy?.close();
  silent.server.closeAllConnections();
  await Promise.all([...good, bad, silent].map((b) => b.close()));
});

describe('upstream failures', () => {
  it('retries a refused connection on another endpoint: no request fails', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++)
      statuses.push(await get(proxy.listenerPort('refused') as number, agent, 'refused.test'));
    agent.destroy();
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(good.every((b) => b.hits > 0)).toBe(true);
  });

  it('a retried connect failure never goes back to the endpoint that refused (least-request, regression)', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const statuses: number[] = [];
    for (let i = 0; i < 150; i++)
      statuses.push(await get(proxy.listenerPort('refused-lr') as number, agent, 'refused-lr.test'));
    agent.destroy();
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
  });

  it('ejects an endpoint that keeps failing and counts the ejection', async () => {
    for (const b of [...good, bad]) b.hits = 0;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    const statuses: number[] = [];
    for (let i = 0; i < 90; i++)
      statuses.push(await get(proxy.listenerPort('outlier') as number, agent, 'outlier.test'));
    agent.destroy();
    const metrics = (await fetchText(proxy.adminPort as number, '/metrics')).body;
    const series = (name: string): number => {
      const line = metrics.split('\n').find((l) => l.startsWith(`${name}{cluster="outlier",endpoint="${bad.key}"}`));
      return Number(line?.split(' ').pop() ?? Number.NaN);
    };
    // Round robin would give it 30; ejection after 3 consecutive failures stops that early.
    // Counted on both sides: the proxy's attempts and errors on the endpoint, and the 503s the
    // endpoint served itself. The lines of this cluster are in the message, to tell why if it
    // fails.
    const attempts = series('evenlb_proxy_upstream_requests_total');
    const lines = metrics
      .split('\n')
      .filter((l) => l.includes('cluster="outlier"'))
      .join('\n');
    expect(series('evenlb_proxy_upstream_errors_total'), lines).toBeGreaterThanOrEqual(3);
    expect(attempts, lines).toBeGreaterThanOrEqual(3);
    expect(attempts, lines).toBeLessThanOrEqual(5);
    expect(bad.hits, lines).toBeGreaterThanOrEqual(3);
    expect(bad.hits, lines).toBeLessThanOrEqual(attempts);
    // Bodiless GETs that got a 5xx may be retried on another endpoint (retries.idempotent).
    expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
    expect(statuses.filter((s) => s === 503).length).toBeLessThanOrEqual(bad.hits);
    expect(metrics).toContain(`evenlb_proxy_endpoint_ejected{cluster="outlier",endpoint="${bad.key}"} 1`);
    expect(metrics).toContain(`evenlb_proxy_endpoint_ejections_total{cluster="outlier",endpoint="${bad.key}"} 1`);
  });
});

describe('upstream timeouts', () => {
  it('answers 504 with x-evenlb-reason when the upstream sends no response head in time', async () => {
    const startMs = Date.now();
    const res = await new Promise<{ status: number; reason: unknown }>((resolve, reject) =>
      http
        .get(
          {
            host: '127.0.0.1',
            port: proxy.listenerPort('refused'),
            path: '/',
            agent: false,
            headers: { host: 'slow.test' },
          },
          (r) => {
            r.resume();
            r.on('end', () => resolve({ status: r.statusCode ?? 0, reason: r.headers['x-evenlb-reason'] }));
          },
        )
        .on('error', reject),
    );
    expect(res).toEqual({ status: 504, reason: 'upstream-timeout' });
    expect(Date.now() - startMs).toBeLessThan(5000);
    expect(silent.hits).toBe(1);
  });
});
