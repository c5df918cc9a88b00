/**
 * `reportLoad` on real servers: HTTP/1.1 responses carry the ORCA `endpoint-load-metrics` header
 * in the TEXT form (utilizations, rates, requests in flight, latency estimate), sampled when
 * asked; the load document answers probes with the requests in flight now, before the
 * application sees the request; an h2c server needs `loadPort` and reports on its streams; with
 * fair-share recycling one document serves both peers and probes at one path; `close()` stops
 * it all.
 */
import http from 'node:http';
import http2 from 'node:http2';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { parseLoadReport } from '../../src/balancing/load-report.js';
import { DEFAULT_LOAD_PATH, recycleConnections, reportLoad } from '../../src/server/index.js';
import { listen, shutdown } from './support/servers.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface App {
  readonly server: http.Server;
  port: number;
  /** Requests the application handled. */
  handled: number;
  /** Answers held until released. */
  readonly held: (() => void)[];
  hold: boolean;
}

async function startApp(address = '127.0.0.1'): Promise<App> {
  const app: App = {
    port: 0,
    handled: 0,
    held: [],
    hold: false,
    server: http.createServer((req, res) => {
      app.handled++;
      req.resume();
      const answer = () => {
        if (req.url === '/fail') res.writeHead(500);
        res.end('ok');
      };
      if (app.hold) app.held.push(answer);
      else answer();
    }),
  };
  app.port = await listen(app.server, address);
  cleanups.push(() => shutdown(app.server));
  return app;
}

async function get(port: number, path = '/', host = '127.0.0.1') {
  const res = await request(`http://${host}:${port}${path}`);
  const text = await res.body.text();
  return { status: res.statusCode, header: res.headers['endpoint-load-metrics'] as string | undefined, text };
}

describe('reportLoad on an HTTP/1.1 server', () => {
  it('every response carries a TEXT load report parseLoadReport reads', async () => {
    const app = await startApp();
    const reporting = reportLoad(app.server, { periodMs: 50, applicationUtilization: () => 0.4 });
    cleanups.push(() => reporting.close());
    for (let i = 0; i < 10; i++) await get(app.port);
    const { header } = await get(app.port);
    expect(header?.startsWith('TEXT ')).toBe(true);
    const report = parseLoadReport(header as string);
    expect(report).toMatchObject({ applicationUtilization: 0.4, namedMetrics: { inflight: 0 } });
    expect(report?.cpuUtilization).toBeGreaterThanOrEqual(0);
    expect(report?.rpsFractional).toBeGreaterThanOrEqual(0);
    expect(report?.eps).toBe(0);
    expect(report?.namedMetrics?.latency_ms).toBeGreaterThanOrEqual(0);
    expect(reporting.reporter.stats()).toMatchObject({ requests: 11, inFlight: 0, reportsAttached: 11 });
  });

  it('the load document answers probes with the requests in flight, without reaching the application', async () => {
    const app = await startApp();
    const reporting = reportLoad(app.server);
    cleanups.push(() => reporting.close());
    app.hold = true;
    const pending = [get(app.port), get(app.port), get(app.port)];
    while (app.held.length < 3) await new Promise((r) => setTimeout(r, 5));
    const probe = await get(app.port, DEFAULT_LOAD_PATH);
    expect(probe.status).toBe(200);
    expect(JSON.parse(probe.text)).toMatchObject({ protocol: 'evenlb-load/1', inFlight: 3 });
    expect(app.handled).toBe(3);
    // Answered one at a time: each answer counts the other requests in flight when its head is written.
    const inflight: (number | undefined)[] = [];
    for (const [i, answer] of app.held.splice(0).entries()) {
      answer();
      inflight.push(parseLoadReport((await pending[i])?.header as string)?.namedMetrics?.inflight);
    }
    expect(inflight).toEqual([2, 1, 0]);
  });

  it('sampleRate: a quarter of the responses carry the report', async () => {
    const app = await startApp();
    const reporting = reportLoad(app.server, { sampleRate: 0.25 });
    cleanups.push(() => reporting.close());
    let carried = 0;
    for (let i = 0; i < 40; i++) if ((await get(app.port)).header !== undefined) carried++;
    expect(carried).toBe(10);
  });

  it('5xx responses count as errors (eps)', async () => {
    const app = await startApp();
    const reporting = reportLoad(app.server, { periodMs: 20, windowMs: 20 });
    cleanups.push(() => reporting.close());
    for (let i = 0; i < 20; i++) await get(app.port, '/fail');
    await new Promise((r) => setTimeout(r, 60));
    expect(reporting.reporter.report().eps).toBeGreaterThan(0);
  });

  it('close() stops the reports, and the load path reaches the application again', async () => {
    const app = await startApp();
    const reporting = reportLoad(app.server);
    await reporting.close();
    await reporting.close();
    expect((await get(app.port)).header).toBeUndefined();
    await get(app.port, DEFAULT_LOAD_PATH);
    expect(app.handled).toBe(2);
  });

  it('one reporter per server; a second is refused naming the server', async () => {
    const app = await startApp();
    const reporting = reportLoad(app.server);
    cleanups.push(() => reporting.close());
    expect(() => reportLoad(app.server)).toThrow(/already reports its load/);
    expect(() => reportLoad(app.server, { sampleRate: 3 })).toThrow(/sampleRate/);
  });
});

describe('reportLoad costs: requests seen, not connections tracked', () => {
  /** Close listeners on each response as the application sees it, and connection listeners on the server. */
  async function listenersWith(attach: (server: http.Server) => () => Promise<unknown>) {
    const closeListeners: number[] = [];
    const server = http.createServer((req, res) => {
      closeListeners.push(res.listenerCount('close'));
      req.resume();
      res.end('ok');
    });
    const port = await listen(server);
    cleanups.push(() => shutdown(server));
    const before = server.listenerCount('connection');
    const detach = attach(server);
    cleanups.push(detach);
    const connection = server.listenerCount('connection') - before;
    const headers: (string | undefined)[] = [];
    for (let i = 0; i < 3; i++) headers.push((await get(port)).header);
    return { connection, close: closeListeners, headers };
  }

  it('alone it adds no connection listener and one close listener per response; with a recycler they share one', async () => {
    const plain = await listenersWith(() => async () => {});
    const alone = await listenersWith((server) => reportLoad(server).close);
    const recycler = await listenersWith((server) => {
      const recycling = recycleConnections(server);
      const reporting = reportLoad(server);
      return async () => Promise.all([reporting.close(), recycling.close()]);
    });
    const tracked = await listenersWith((server) => recycleConnections(server).close);
    expect(alone.headers.every((h) => h?.startsWith('TEXT '))).toBe(true);
    expect(recycler.headers.every((h) => h?.startsWith('TEXT '))).toBe(true);
    expect(alone.connection).toBe(0);
    expect(alone.close).toEqual(plain.close.map((n) => n + 1));
    expect(recycler.close).toEqual(tracked.close);
    expect(tracked.connection).toBe(1);
  });

  it('the report stands beside what the application sets, and overrides its own endpoint-load-metrics', async () => {
    const server = http.createServer((req, res) => {
      req.resume();
      if (req.url === '/set') res.setHeader('x-app', 'set');
      if (req.url === '/own') res.setHeader('endpoint-load-metrics', 'TEXT eps=99');
      if (req.url === '/reason') res.writeHead(202, 'Taken');
      if (req.url === '/object') res.writeHead(201, 'Made', { 'x-app': 'object' });
      if (req.url === '/array') res.writeHead(201, ['x-app', 'array']);
      res.end('ok');
    });
    const port = await listen(server);
    cleanups.push(() => shutdown(server));
    const reporting = reportLoad(server);
    cleanups.push(() => reporting.close());
    for (const [path, status, app] of [
      ['/', 200, undefined],
      ['/set', 200, 'set'],
      ['/own', 200, undefined],
      ['/reason', 202, undefined],
      ['/object', 201, 'object'],
      ['/array', 201, 'array'],
    ] as const) {
      const res = await request(`http://127.0.0.1:${port}${path}`);
      await res.body.text();
      expect({ path, status: res.statusCode, app: res.headers['x-app'] }).toEqual({ path, status, app });
      const report = parseLoadReport(res.headers['endpoint-load-metrics'] as string);
      expect(report?.namedMetrics?.inflight, path).toBe(0);
      expect(report?.eps, path).toBe(0);
    }
    expect(reporting.reporter.stats()).toMatchObject({ requests: 6, reportsAttached: 6 });
  });

  it('a recycler attached after reportLoad limits connections; closing it leaves reporting as it was', async () => {
    const app = await startApp();
    const connectionListeners = app.server.listenerCount('connection');
    const reporting = reportLoad(app.server);
    cleanups.push(() => reporting.close());
    await get(app.port);
    const recycling = recycleConnections(app.server, { maxRequestsPerConnection: 2 });
    for (let i = 0; i < 6; i++) expect((await get(app.port)).header?.startsWith('TEXT ')).toBe(true);
    expect(recycling.stats().closed.requests).toBeGreaterThanOrEqual(2);
    await recycling.close();
    expect(app.server.listenerCount('connection')).toBe(connectionListeners);
    for (let i = 0; i < 3; i++) expect((await get(app.port)).header?.startsWith('TEXT ')).toBe(true);
    expect(reporting.reporter.stats()).toMatchObject({ requests: 10, inFlight: 0, reportsAttached: 10 });
  });
});

describe('reportLoad with fair-share recycling: one document, one path', () => {
  it('peers and probes read the same document; a different path is refused naming the field', async () => {
    const app = await startApp('127.0.4.1');
    const recycler = recycleConnections(app.server, {
      fairShare: { peers: `static:///127.0.4.1:${app.port}`, self: '127.0.4.1' },
    });
    cleanups.push(() => recycler.close());
    expect(() => reportLoad(app.server, { loadPath: '/elsewhere' })).toThrow(/"loadPath" must match/);
    const reporting = reportLoad(app.server);
    cleanups.push(() => reporting.close());
    const doc = JSON.parse((await get(app.port, DEFAULT_LOAD_PATH, '127.0.4.1')).text) as Record<string, unknown>;
    expect(doc).toMatchObject({ protocol: 'evenlb-load/1', metric: 'requests-per-second', inFlight: 0 });
    expect(typeof doc.load).toBe('number');
    // No request completed yet: the server does not know its latency and leaves it out.
    expect(doc).not.toHaveProperty('latencyMs');
    await get(app.port, '/', '127.0.4.1');
    const later = JSON.parse((await get(app.port, DEFAULT_LOAD_PATH, '127.0.4.1')).text) as Record<string, unknown>;
    expect(later.latencyMs).toBeGreaterThan(0);
    // Reporting stops; the peer document stays.
    await reporting.close();
    const after = JSON.parse((await get(app.port, DEFAULT_LOAD_PATH, '127.0.4.1')).text) as Record<string, unknown>;
    expect(after.metric).toBe('requests-per-second');
    expect(after.inFlight).toBeUndefined();
  });
});

describe('reportLoad on an h2c server', () => {
  it('needs loadPort; then streams carry the report and probes are answered there', async () => {
    const server = http2.createServer((_req, res) => res.end('ok'));
    const port = await listen(server);
    cleanups.push(() => shutdown(server));
    expect(() => reportLoad(server)).toThrow(/"loadPort" must be set for an HTTP\/2 server/);
    // A port known to be free a moment ago: the load document binds it.
    const free = await freePort();
    const reporting = reportLoad(server, { loadPort: free, loadHost: '127.0.0.1' });
    cleanups.push(() => reporting.close());
    expect(await reporting.listening).toBe(true);
    const session = http2.connect(`http://127.0.0.1:${port}`);
    cleanups.push(() => session.close());
    const header = await new Promise<string | undefined>((resolve, reject) => {
      const stream = session.request({ ':path': '/' });
      stream.on('response', (headers) => resolve(headers['endpoint-load-metrics'] as string | undefined));
      stream.on('error', reject);
      stream.resume();
      stream.end();
    });
    expect(parseLoadReport(header as string)?.namedMetrics?.inflight).toBe(0);
    const probe = await get(free, DEFAULT_LOAD_PATH);
    expect(JSON.parse(probe.text)).toMatchObject({ protocol: 'evenlb-load/1', inFlight: 0 });
  });
});

async function freePort(): Promise<number> {
  const s = http.createServer();
  const port = await listen(s);
  await shutdown(s);
  return port;
}
