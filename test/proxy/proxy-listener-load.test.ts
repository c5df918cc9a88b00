/**
 * A proxy listener reports the load of the app it fronts (`listeners[].loadReport`), on real
 * sockets: responses to HTTP/1.1, HTTP/1.0 and h2c clients carry an `endpoint-load-metrics`
 * report (read with the project's own parser) whose `inflight` counts requests held open at the
 * backend; the load document answers probes with `inFlight` and `latencyMs` — on its own port,
 * or on the fair-share load port beside the peer report; requests in flight return to 0 after
 * aborted clients, upstream resets and local replies; an app's own report is passed through, not
 * doubled; configuration mistakes name the field; and a balancer probing two sidecar-style
 * proxies (one in front of a fast app, one of a slow one) sends less to the slow one.
 */
import http from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { parseLoadReport } from '../../src/balancing/load-report.js';
import { BalancedAgent, SeededRandom, StaticEndpointSource } from '../../src/index.js';
import { normalizeProxyConfig } from '../../src/proxy/config/proxy-config.js';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { nextLoopbackAddress } from '../support/loopback-pods.js';
import { freePort } from '../support/tracked-server.js';
import { fetchText, startProxy, waitFor } from './helpers.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface App {
  readonly port: number;
  readonly address: string;
  /** Requests held at `/hold` until `release()`. */
  readonly held: http.ServerResponse[];
  release(): void;
  hits: number;
}

/** An app: `/hold` waits for `release()`, `/reset` destroys its socket, `/own` reports itself, `/slow` takes `delayMs`. */
async function startApp(delayMs = 0, address = '127.0.0.1'): Promise<App> {
  const held: http.ServerResponse[] = [];
  const app = {
    held,
    hits: 0,
    release: () => {
      for (const r of held.splice(0)) r.end('released');
    },
  };
  const server = http.createServer((req, res) => {
    req.resume();
    app.hits++;
    if (req.url === '/hold') held.push(res);
    else if (req.url === '/reset') req.socket.destroy();
    else if (req.url === '/own')
      res.writeHead(200, { 'endpoint-load-metrics': 'TEXT application_utilization=0.9' }).end('own');
    else if (delayMs > 0) setTimeout(() => res.end('slow'), delayMs);
    else res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  cleanups.push(() => {
    app.release();
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return Object.assign(app, { port: (server.address() as AddressInfo).port, address });
}

async function reportingProxy(app: App, loadReport: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const proxy: ProxyServer = await startProxy({
    listeners: [{ name: 'main', address: '127.0.0.1:0', loadReport, ...extra }],
    clusters: [{ name: 'app', target: `static:///${app.address}:${app.port}`, outlierDetection: false }],
  });
  cleanups.push(() => proxy.close());
  return { proxy, port: proxy.listenerPort('main') as number };
}

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly reports: string[];
}

function get(port: number, path: string, agent: http.Agent | false = false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent, headers: { host: 'svc.test' } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          const reports: string[] = [];
          for (let i = 0; i < res.rawHeaders.length; i += 2)
            if (res.rawHeaders[i]?.toLowerCase() === 'endpoint-load-metrics')
              reports.push(res.rawHeaders[i + 1] as string);
          resolve({ status: res.statusCode ?? 0, body, reports });
        });
      })
      .on('error', reject);
  });
}

async function probe(loadPort: number): Promise<Record<string, unknown>> {
  return JSON.parse((await fetchText(loadPort, '/.well-known/evenlb/load')).body) as Record<string, unknown>;
}

const inFlightIs = (loadPort: number, n: number) => async () => (await probe(loadPort)).inFlight === n;

describe('proxy listener load reports', () => {
  it('HTTP/1.1 responses carry a report whose inflight counts the requests held at the app; probes say inFlight and latencyMs', async () => {
    const app = await startApp();
    const loadPort = await freePort();
    const { port } = await reportingProxy(app, { loadPort, loadHost: '127.0.0.1', maxInFlight: 10, periodMs: 50 });
    const first = await get(port, '/');
    expect(first.reports).toHaveLength(1);
    expect(parseLoadReport(first.reports[0] as string)?.namedMetrics?.inflight).toBe(0);
    const holding = [get(port, '/hold'), get(port, '/hold'), get(port, '/hold')];
    await waitFor(() => app.held.length === 3, 5000, 'three requests held at the app');
    const during = await get(port, '/');
    const report = parseLoadReport(during.reports[0] as string);
    expect(report?.namedMetrics?.inflight).toBe(3);
    expect(report?.rpsFractional).toBeGreaterThanOrEqual(0);
    const doc = await probe(loadPort);
    expect(doc.inFlight).toBe(3);
    expect(typeof doc.latencyMs).toBe('number');
    app.release();
    const held = await Promise.all(holding);
    expect(held.map((a) => a.reports.length)).toEqual([1, 1, 1]);
    await waitFor(inFlightIs(loadPort, 0), 5000, 'in flight back to 0');
  });

  it('requests in flight return to 0 after aborted clients, upstream resets and local replies', async () => {
    const app = await startApp();
    const loadPort = await freePort();
    const { port, proxy } = await reportingProxy(app, { loadPort, loadHost: '127.0.0.1' });
    // Aborted: the client leaves while the app holds the request.
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write('GET /hold HTTP/1.1\r\nHost: svc.test\r\n\r\n');
    await waitFor(() => app.held.length === 1, 5000, 'held');
    expect((await probe(loadPort)).inFlight).toBe(1);
    socket.destroy();
    await waitFor(inFlightIs(loadPort, 0), 5000, 'in flight 0 after the client left');
    // Upstream reset: a 502 local reply, counted as an error.
    const reset = await get(port, '/reset');
    expect(reset.status).toBe(502);
    await waitFor(inFlightIs(loadPort, 0), 5000, 'in flight 0 after the reset');
    // HTTP/1.0 (node:http path), then its aborted twin.
    const h10 = net.connect(port, '127.0.0.1');
    const h10Text = await new Promise<string>((resolve) => {
      let text = '';
      h10.on('data', (c) => (text += c.toString('latin1')));
      h10.on('close', () => resolve(text));
      h10.write('GET / HTTP/1.0\r\nHost: svc.test\r\n\r\n');
    });
    expect(h10Text).toMatch(/^HTTP\/1\.[01] 200/);
    expect(h10Text.toLowerCase()).toContain('endpoint-load-metrics: text ');
    // The app goes away: 502/503 local replies.
    app.release();
    await proxy.close();
    const gone = await startProxy({
      listeners: [{ name: 'main', address: '127.0.0.1:0', loadReport: { loadPort, loadHost: '127.0.0.1' } }],
      clusters: [{ name: 'app', target: `static:///127.0.0.1:${await freePort()}`, outlierDetection: false }],
    });
    cleanups.push(() => gone.close());
    const refused = await get(gone.listenerPort('main') as number, '/');
    expect(refused.status).toBeGreaterThanOrEqual(500);
    await waitFor(inFlightIs(loadPort, 0), 5000, 'in flight 0 after a local reply');
  });

  it('an h2c client gets the report on its response headers too, and in flight returns to 0 after a reset stream', async () => {
    const app = await startApp();
    const loadPort = await freePort();
    const { port } = await reportingProxy(app, { loadPort, loadHost: '127.0.0.1' });
    const session = http2.connect(`http://127.0.0.1:${port}`);
    cleanups.push(() => session.close());
    const headers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
      const req = session.request({ ':path': '/', ':authority': 'svc.test' });
      req.on('response', resolve);
      req.on('error', reject);
      req.resume();
    });
    expect(parseLoadReport(String(headers['endpoint-load-metrics']))).toBeDefined();
    const held = session.request({ ':path': '/hold', ':authority': 'svc.test' });
    held.on('error', () => {});
    await waitFor(() => app.held.length === 1, 5000, 'held');
    expect((await probe(loadPort)).inFlight).toBe(1);
    held.close(http2.constants.NGHTTP2_CANCEL);
    await waitFor(inFlightIs(loadPort, 0), 5000, 'in flight 0 after the cancelled stream');
  });

  it("an app's own report is passed through, not doubled", async () => {
    const app = await startApp();
    const loadPort = await freePort();
    const { port } = await reportingProxy(app, { loadPort, loadHost: '127.0.0.1' });
    const own = await get(port, '/own');
    expect(own.reports).toEqual(['TEXT application_utilization=0.9']);
  });

  it('sampleRate 0.25 puts a report on one response in four', async () => {
    const app = await startApp();
    const loadPort = await freePort();
    const { port } = await reportingProxy(app, { loadPort, loadHost: '127.0.0.1', sampleRate: 0.25 });
    const agent = new http.Agent({ keepAlive: true });
    cleanups.push(() => agent.destroy());
    let reported = 0;
    for (let i = 0; i < 40; i++) reported += (await get(port, '/', agent)).reports.length;
    expect(reported).toBe(10);
  });

  it('with recycle.fairShare, one load document on its port carries the peer report and the probe figures', async () => {
    const app = await startApp();
    const loadPort = await freePort();
    await reportingProxy(
      app,
      { maxInFlight: 8 },
      { recycle: { fairShare: { peers: 'static:///127.0.0.1:1', loadPort, loadHost: '127.0.0.1' } } },
    );
    const doc = await probe(loadPort);
    expect(doc).toMatchObject({ protocol: 'evenlb-load/1', metric: 'requests-per-second', inFlight: 0 });
    expect(typeof doc.load).toBe('number');
    // No request completed yet: the latency is unknown and left out.
    expect(doc).not.toHaveProperty('latencyMs');
  });

  it('a reload changing loadReport keeps answering probes on the same port', async () => {
    const app = await startApp();
    const loadPort = await freePort();
    const { proxy, port } = await reportingProxy(app, { loadPort, loadHost: '127.0.0.1' });
    await get(port, '/');
    await proxy.reload(
      normalizeProxyConfig({
        listeners: [
          {
            name: 'main',
            address: proxy.config.listeners[0]?.address,
            loadReport: { loadPort, loadHost: '127.0.0.1', sampleRate: 0.5 },
          },
        ],
        clusters: [{ name: 'app', target: `static:///${app.address}:${app.port}`, outlierDetection: false }],
      }),
    );
    await waitFor(
      async () => (await probe(loadPort).catch(() => undefined))?.inFlight === 0,
      5000,
      'probes after the reload',
    );
  });

  const bad: { name: string; listener: Record<string, unknown>; error: RegExp }[] = [
    {
      name: 'no loadPort without fairShare',
      listener: { loadReport: {} },
      error: /listeners\[0\]\.loadReport\.loadPort" is required/,
    },
    {
      name: 'an unknown field',
      listener: { loadReport: { loadPort: 9904, cpuPercent: 1 } },
      error: /listeners\[0\]\.loadReport\.cpuPercent/,
    },
    {
      name: 'a bad sampleRate',
      listener: { loadReport: { loadPort: 9904, sampleRate: 2 } },
      error: /listeners\[0\]\.loadReport\.sampleRate/,
    },
    {
      name: 'a loadPort clashing with the admin port',
      listener: { loadReport: { loadPort: 9901 } },
      error: /listeners\[0\]\.loadReport\.loadPort" must not bind the port of admin\.address/,
    },
    {
      name: 'a loadPort other than fair share’s',
      listener: {
        loadReport: { loadPort: 9904 },
        recycle: { fairShare: { peers: 'static:///127.0.0.1:1', loadPort: 9905 } },
      },
      error: /listeners\[0\]\.loadReport\.loadPort" must be left out or equal recycle\.fairShare\.loadPort \(9905\)/,
    },
    {
      name: 'a tcp listener',
      listener: { protocol: 'tcp', cluster: 'app', loadReport: { loadPort: 9904 } },
      error: /listeners\[0\]\.loadReport" is only valid for protocol "http" or "https"/,
    },
  ];
  it.each(bad)('config error: $name names the field', ({ listener, error }) => {
    expect(() =>
      normalizeProxyConfig({
        admin: { address: '0.0.0.0:9901' },
        listeners: [{ address: '127.0.0.1:0', ...listener }],
        clusters: [{ name: 'app', target: 'static:///127.0.0.1:1' }],
      }),
    ).toThrow(error);
  });
});

describe('balancing by what sidecar-style proxies report', () => {
  it('a prequal BalancedAgent probing two proxies sends less to the one in front of a slow app', async () => {
    const [a, b] = [nextLoopbackAddress(), nextLoopbackAddress()];
    const fast = await startApp(0, a);
    const slow = await startApp(15, b);
    const loadPort = await freePort(a);
    const proxies = await Promise.all(
      [fast, slow].map(async (app) => {
        const proxy = await startProxy({
          listeners: [
            { name: 'main', address: `${app.address}:0`, loadReport: { loadPort, loadHost: app.address, cpu: false } },
          ],
          clusters: [{ name: 'app', target: `static:///${app.address}:${app.port}`, outlierDetection: false }],
        });
        cleanups.push(() => proxy.close());
        return { address: app.address, port: proxy.listenerPort('main') as number };
      }),
    );
    const agent = new BalancedAgent({
      routes: { 'svc.test:80': new StaticEndpointSource(proxies.map((p) => ({ address: p.address, port: p.port }))) },
      policy: 'prequal',
      policyOptions: { probesPerRequest: 1 },
      loadProbes: { port: loadPort },
      random: new SeededRandom(11),
    });
    cleanups.push(() => agent.close());
    let sent = 0;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (sent < 600 && Date.now() - started < 20_000) {
          sent++;
          const res = await request('http://svc.test/', { dispatcher: agent });
          await res.body.dump();
        }
      }),
    );
    const ratio = slow.hits / fast.hits;
    process.stdout.write(
      `prequal over reporting proxies: fast ${fast.hits}, slow ${slow.hits} (slow/fast ${ratio.toFixed(2)})\n`,
    );
    // Equal shares would be 1; the slow app (15 ms a request) gets well under half the fast one's.
    expect(ratio).toBeLessThan(0.5);
  }, 30_000);
});
