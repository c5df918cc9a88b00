/**
 * `maxRequestsPerConnection`: one client connection sending 1,000 requests to a server that
 * recycles after 50 must see ≥ 20 server-side connections, exactly 50 requests on each full one,
 * and no failed request — for every client and protocol a Kubernetes workload meets.
 */
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import net from 'node:net';
import Fastify from 'fastify';
import { Registry } from 'prom-client';
import { Client, Pool } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.js';
import { serverMetricNames } from '../../src/metrics/server-metrics.js';
import { type ConnectionRecycler, recycleConnections } from '../../src/server/index.js';
import { RetryingH2Client } from './support/h2-client.js';
import { httpGetText, listen, PerConnectionCounter, selfSignedCert, shutdown, waitFor } from './support/servers.js';

const N = 50;
const TOTAL = 1000;
const tlsMaterial = selfSignedCert();

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

/** Every connection but the last must carry exactly N; the last at most N. */
function expectExactlyN(counts: number[], total: number): void {
  expect(counts.reduce((a, b) => a + b, 0)).toBe(total);
  expect(counts.length).toBeGreaterThanOrEqual(Math.floor(total / N));
  expect(counts.slice(0, -1).every((c) => c === N)).toBe(true);
  expect(counts.at(-1)).toBeLessThanOrEqual(N);
}

function http1Server(counter: PerConnectionCounter): http.Server {
  return http.createServer((req, res) => {
    counter.add(req.socket);
    res.end('ok');
  });
}

function attach(server: Parameters<typeof recycleConnections>[0], registry?: Registry): ConnectionRecycler {
  const recycler = recycleConnections(server, {
    maxRequestsPerConnection: N,
    random: new SeededRandom(7),
    ...(registry === undefined ? {} : { metrics: { registry } }),
  });
  cleanups.push(() => recycler.close());
  return recycler;
}

async function sequential(count: number, send: () => Promise<string>): Promise<{ ok: number; failed: number }> {
  let ok = 0;
  let failed = 0;
  for (let i = 0; i < count; i++) {
    try {
      if ((await send()) === 'ok') ok++;
      else failed++;
    } catch {
      failed++;
    }
  }
  return { ok, failed };
}

describe('recycleConnections: maxRequestsPerConnection 50, 1,000 requests over one client connection', () => {
  it('HTTP/1.1, undici Client: exactly 50 per connection, 0 failed, metrics by reason', async () => {
    const counter = new PerConnectionCounter();
    const server = http1Server(counter);
    const registry = new Registry();
    const recycler = attach(server, registry);
    const port = await listen(server);
    cleanups.push(() => shutdown(server));
    const client = new Client(`http://127.0.0.1:${port}`);
    cleanups.push(() => client.close());

    const r = await sequential(TOTAL, async () => (await client.request({ path: '/', method: 'GET' })).body.text());
    expect(r).toEqual({ ok: TOTAL, failed: 0 });
    expectExactlyN(counter.counts(), TOTAL);
    expect(counter.counts().length).toBe(TOTAL / N);

    await waitFor(() => recycler.stats().closed.requests === TOTAL / N, 5000, 'the last connection to close');
    const stats = recycler.stats();
    expect(stats.requests).toBe(TOTAL);
    expect(stats.closed.requests).toBe(TOTAL / N);
    expect(stats.droppedRequests).toBe(0);

    const closed = await registry.getSingleMetric(serverMetricNames.connectionsClosed)?.get();
    const byReason = Object.fromEntries((closed?.values ?? []).map((v) => [v.labels.reason, v.value]));
    expect(byReason.requests).toBe(TOTAL / N);
    const perConn = await registry.getSingleMetric(serverMetricNames.requestsPerConnection)?.get();
    const sum = perConn?.values.find((v) => (v as { metricName?: string }).metricName?.endsWith('_sum'));
    expect(sum?.value).toBe(TOTAL);
    const ages = await registry.getSingleMetric(serverMetricNames.connectionAgeSeconds)?.get();
    const ageCount = ages?.values.find((v) => (v as { metricName?: string }).metricName?.endsWith('_count'));
    expect(ageCount?.value).toBe(TOTAL / N);
    const opened = await registry.getSingleMetric(serverMetricNames.connectionsOpened)?.get();
    expect(opened?.values[0]).toMatchObject({ labels: { protocol: 'http1' }, value: TOTAL / N });
    const open = await registry.getSingleMetric(serverMetricNames.openConnections)?.get();
    expect(open?.values[0]?.value).toBe(0);
  });

  it('HTTP/1.1, undici Pool (connections: 1)', async () => {
    const counter = new PerConnectionCounter();
    const server = http1Server(counter);
    attach(server);
    const port = await listen(server);
    cleanups.push(() => shutdown(server));
    const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 1 });
    cleanups.push(() => pool.close());

    const r = await sequential(TOTAL, async () => (await pool.request({ path: '/', method: 'GET' })).body.text());
    expect(r).toEqual({ ok: TOTAL, failed: 0 });
    expectExactlyN(counter.counts(), TOTAL);
  });

  it("HTTP/1.1, node's http.Agent (keepAlive, maxSockets 1)", async () => {
    const counter = new PerConnectionCounter();
    const server = http1Server(counter);
    attach(server);
    const port = await listen(server);
    cleanups.push(() => shutdown(server));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    cleanups.push(async () => agent.destroy());

    const get = () => httpGetText(port, agent);
    const r = await sequential(TOTAL, get);
    expect(r).toEqual({ ok: TOTAL, failed: 0 });
    expectExactlyN(counter.counts(), TOTAL);
  });

  it('HTTPS, undici Client over TLS', async () => {
    const counter = new PerConnectionCounter();
    const server = https.createServer({ key: tlsMaterial.key, cert: tlsMaterial.cert }, (req, res) => {
      counter.add(req.socket);
      res.end('ok');
    });
    attach(server);
    const port = await listen(server);
    cleanups.push(() => shutdown(server));
    const client = new Client(`https://localhost:${port}`, { connect: { ca: tlsMaterial.cert, host: '127.0.0.1' } });
    cleanups.push(() => client.close());

    const r = await sequential(TOTAL, async () => (await client.request({ path: '/', method: 'GET' })).body.text());
    expect(r).toEqual({ ok: TOTAL, failed: 0 });
    expectExactlyN(counter.counts(), TOTAL);
  });

  it('HTTP/1.1 pipelining: requests behind the closing response never reach the handler', async () => {
    const counter = new PerConnectionCounter();
    const server = http1Server(counter);
    const recycler = attach(server);
    const port = await listen(server);
    cleanups.push(() => shutdown(server));

    // 60 pipelined requests in one write: 50 answered (the last with Connection: close), then EOF.
    const socket = net.connect(port, '127.0.0.1');
    const raw = await new Promise<string>((resolve, reject) => {
      let data = '';
      socket.setEncoding('utf8');
      socket.on('data', (c: string) => (data += c));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
      socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(60));
    });
    socket.destroy();
    const statuses = raw.match(/HTTP\/1\.1 \d+/g) ?? [];
    expect(statuses).toHaveLength(N);
    expect(statuses.every((s) => s === 'HTTP/1.1 200')).toBe(true);
    expect((raw.match(/^connection: close/gim) ?? []).length).toBe(1);
    expect(counter.counts()).toEqual([N]);
    expect(recycler.stats().droppedRequests).toBeGreaterThanOrEqual(1);
  });

  it('h2c, node http2 client with 4 concurrent streams, retrying refused streams', async () => {
    const counter = new PerConnectionCounter();
    const server = http2.createServer();
    server.on('stream', (stream) => {
      counter.add(stream.session as object);
      stream.respond({ ':status': 200 });
      stream.end('ok');
    });
    const recycler = attach(server);
    const port = await listen(server);
    cleanups.push(() => shutdown(server));
    const client = new RetryingH2Client(`http://127.0.0.1:${port}`);
    cleanups.push(() => client.close());

    let next = 0;
    let ok = 0;
    let failed = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < TOTAL) {
          next++;
          try {
            const res = await client.get('/');
            if (res.status === 200 && res.body === 'ok') ok++;
            else failed++;
          } catch {
            failed++;
          }
        }
      }),
    );
    expect({ ok, failed }).toEqual({ ok: TOTAL, failed: 0 });
    expectExactlyN(counter.counts(), TOTAL);
    expect(client.sessions).toBeGreaterThanOrEqual(TOTAL / N);
    expect(recycler.stats().closed.requests + recycler.stats().open).toBeGreaterThanOrEqual(TOTAL / N);
  });

  it('h2 over TLS with allowHTTP1: both an h2 client and an HTTP/1.1 client get exactly 50', async () => {
    const h2Counter = new PerConnectionCounter();
    const h1Counter = new PerConnectionCounter();
    const server = http2.createSecureServer({ key: tlsMaterial.key, cert: tlsMaterial.cert, allowHTTP1: true });
    server.on('request', (req: http2.Http2ServerRequest | http.IncomingMessage, res) => {
      if (req.httpVersionMajor === 2) h2Counter.add((req as http2.Http2ServerRequest).stream.session as object);
      else h1Counter.add(req.socket);
      res.end('ok');
    });
    attach(server);
    const port = await listen(server);
    cleanups.push(() => shutdown(server));

    const h2 = new RetryingH2Client(`https://localhost:${port}`, { ca: tlsMaterial.cert, host: '127.0.0.1' });
    cleanups.push(() => h2.close());
    const r2 = await sequential(TOTAL, async () => (await h2.get('/')).body);
    expect(r2).toEqual({ ok: TOTAL, failed: 0 });
    expectExactlyN(h2Counter.counts(), TOTAL);

    const h1 = new Client(`https://localhost:${port}`, { connect: { ca: tlsMaterial.cert, host: '127.0.0.1' } });
    cleanups.push(() => h1.close());
    const r1 = await sequential(TOTAL, async () => (await h1.request({ path: '/', method: 'GET' })).body.text());
    expect(r1).toEqual({ ok: TOTAL, failed: 0 });
    expectExactlyN(h1Counter.counts(), TOTAL);
  });

  it('Fastify: pass fastify.server', async () => {
    const counter = new PerConnectionCounter();
    const app = Fastify();
    app.get('/', async (req) => {
      counter.add(req.raw.socket);
      return 'ok';
    });
    attach(app.server);
    await app.listen({ port: 0, host: '127.0.0.1' });
    cleanups.push(() => app.close());
    const address = app.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    // A Pool, not an Agent: undici 7.30's Agent closes an origin's Pool whenever its connected
    // count drops to 0, so after a server-side close each later connection carries one request.
    const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 1 });
    cleanups.push(() => pool.close());

    const r = await sequential(TOTAL, async () => (await pool.request({ path: '/', method: 'GET' })).body.text());
    expect(r).toEqual({ ok: TOTAL, failed: 0 });
    expectExactlyN(counter.counts(), TOTAL);
  });
});
