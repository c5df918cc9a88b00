/**
 * A load-reporting listener (`listeners[].loadReport`) counts what it reports, on real sockets
 * and read from the admin `/metrics`: each response it adds a report to raises
 * `evenlb_proxy_load_reports_total{source="proxy"}` by one — on the HTTP/1.1 data path, the
 * node:http path (HTTP/1.0) and h2c alike — an app's own report passed through raises
 * `source="app"` instead, an unsampled response raises neither, and each read of the load
 * document (its own load port, or the fair-share load port) raises
 * `evenlb_proxy_load_probes_answered_total` by one. A listener without `loadReport` has no
 * series; a reload keeps the counts.
 */
import http from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { normalizeProxyConfig } from '../../src/proxy/config/proxy-config.js';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { freePort } from '../support/tracked-server.js';
import { fetchText, startProxy, waitFor } from './helpers.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const REPORTS = 'evenlb_proxy_load_reports_total';
const PROBES = 'evenlb_proxy_load_probes_answered_total';

/** An app on loopback: `/own` answers with its own load report, anything else plain `ok`. */
async function startApp(): Promise<number> {
  const server = http.createServer((req, res) => {
    req.resume();
    if (req.url === '/own')
      res.writeHead(200, { 'endpoint-load-metrics': 'TEXT application_utilization=0.5' }).end('own');
    else res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return (server.address() as AddressInfo).port;
}

function config(appPort: number, listeners: Record<string, unknown>[]) {
  return {
    admin: { address: '127.0.0.1:0' },
    listeners,
    clusters: [{ name: 'app', target: `static:///127.0.0.1:${appPort}`, outlierDetection: false }],
  };
}

async function proxyWith(appPort: number, listeners: Record<string, unknown>[]): Promise<ProxyServer> {
  const proxy = await startProxy(config(appPort, listeners));
  cleanups.push(() => proxy.close());
  return proxy;
}

/** The value of `name{labels}` in the proxy's `/metrics`; undefined when the series is absent. */
async function metric(proxy: ProxyServer, name: string, labels: string): Promise<number | undefined> {
  const text = (await fetchText(proxy.adminPort as number, '/metrics')).body;
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** The report counts of `listener`: [added by the proxy, passed through from the app, probes answered]. */
async function counts(proxy: ProxyServer, listener = 'main'): Promise<(number | undefined)[]> {
  return [
    await metric(proxy, REPORTS, `listener="${listener}",source="proxy"`),
    await metric(proxy, REPORTS, `listener="${listener}",source="app"`),
    await metric(proxy, PROBES, `listener="${listener}"`),
  ];
}

/** `GET path` over HTTP/1.1 on a fresh connection; resolves with the number of reports on the answer. */
function reportsOn(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent: false, headers: { host: 'svc.test' } }, (res) => {
        res.resume();
        res.on('end', () => {
          let n = 0;
          for (let i = 0; i < res.rawHeaders.length; i += 2)
            if (res.rawHeaders[i]?.toLowerCase() === 'endpoint-load-metrics') n++;
          resolve(n);
        });
      })
      .on('error', reject);
  });
}

/** An HTTP/1.0 request (the listener hands it to node:http); resolves with the raw answer. */
function http10(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (c) => (text += c.toString('latin1')));
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
    socket.write('GET / HTTP/1.0\r\nHost: svc.test\r\n\r\n');
  });
}

/** An h2c request; resolves with its response headers. */
function h2Get(port: number): Promise<http2.IncomingHttpHeaders> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  cleanups.push(() => session.close());
  return new Promise((resolve, reject) => {
    const req = session.request({ ':path': '/', ':authority': 'svc.test' });
    req.on('response', resolve);
    req.on('error', reject);
    req.resume();
  });
}

const probe = (loadPort: number) => fetchText(loadPort, '/.well-known/evenlb/load');

describe('load report metrics of a listener', () => {
  it('count each report the listener adds (HTTP/1.1, HTTP/1.0, h2c), each app report passed through, and each probe', async () => {
    const appPort = await startApp();
    const loadPort = await freePort();
    const proxy = await proxyWith(appPort, [
      { name: 'main', address: '127.0.0.1:0', loadReport: { loadPort, loadHost: '127.0.0.1', cpu: false } },
    ]);
    const port = proxy.listenerPort('main') as number;
    expect(await counts(proxy)).toEqual([0, 0, 0]);

    expect(await reportsOn(port, '/')).toBe(1);
    expect(await counts(proxy)).toEqual([1, 0, 0]);
    expect(await reportsOn(port, '/own')).toBe(1);
    expect(await counts(proxy)).toEqual([1, 1, 0]);
    expect((await http10(port)).toLowerCase()).toContain('endpoint-load-metrics: text ');
    expect(await counts(proxy)).toEqual([2, 1, 0]);
    expect((await h2Get(port))['endpoint-load-metrics']).toMatch(/^TEXT /);
    expect(await counts(proxy)).toEqual([3, 1, 0]);

    expect((await probe(loadPort)).status).toBe(200);
    expect(await counts(proxy)).toEqual([3, 1, 1]);
    // Another path on the load port is not a probe.
    expect((await fetchText(loadPort, '/other')).status).toBe(404);
    expect((await probe(loadPort)).status).toBe(200);
    expect(await counts(proxy)).toEqual([3, 1, 2]);
  });

  it('a response left unsampled is not counted (sampleRate 0.25: 8 requests, 2 reports)', async () => {
    const appPort = await startApp();
    const loadPort = await freePort();
    const proxy = await proxyWith(appPort, [
      {
        name: 'main',
        address: '127.0.0.1:0',
        loadReport: { loadPort, loadHost: '127.0.0.1', cpu: false, sampleRate: 0.25 },
      },
    ]);
    const port = proxy.listenerPort('main') as number;
    let seen = 0;
    for (let i = 0; i < 8; i++) seen += await reportsOn(port, '/');
    expect(seen).toBe(2);
    expect(await counts(proxy)).toEqual([2, 0, 0]);
  });

  it('counts per listener; a listener without loadReport has no series; fair share’s load port counts probes', async () => {
    const appPort = await startApp();
    const [loadPort, fairPort] = [await freePort(), await freePort()];
    const proxy = await proxyWith(appPort, [
      { name: 'main', address: '127.0.0.1:0', loadReport: { loadPort, loadHost: '127.0.0.1', cpu: false } },
      {
        name: 'fair',
        address: '127.0.0.1:0',
        loadReport: { cpu: false },
        recycle: { fairShare: { peers: 'static:///127.0.0.1:1', loadPort: fairPort, loadHost: '127.0.0.1' } },
      },
      { name: 'plain', address: '127.0.0.1:0' },
    ]);
    expect(await reportsOn(proxy.listenerPort('fair') as number, '/')).toBe(1);
    expect(await reportsOn(proxy.listenerPort('plain') as number, '/')).toBe(0);
    expect(JSON.parse((await probe(fairPort)).body)).toMatchObject({ inFlight: 0 });
    expect(await counts(proxy, 'fair')).toEqual([1, 0, 1]);
    expect(await counts(proxy, 'main')).toEqual([0, 0, 0]);
    expect(await counts(proxy, 'plain')).toEqual([undefined, undefined, undefined]);
  });

  it('a reload replacing the listener keeps its counts', async () => {
    const appPort = await startApp();
    const loadPort = await freePort();
    const proxy = await proxyWith(appPort, [
      { name: 'main', address: '127.0.0.1:0', loadReport: { loadPort, loadHost: '127.0.0.1', cpu: false } },
    ]);
    const port = proxy.listenerPort('main') as number;
    await reportsOn(port, '/');
    await probe(loadPort);
    expect(await counts(proxy)).toEqual([1, 0, 1]);
    await proxy.reload(
      normalizeProxyConfig(
        config(appPort, [
          {
            name: 'main',
            address: proxy.config.listeners[0]?.address,
            loadReport: { loadPort, loadHost: '127.0.0.1', cpu: false, periodMs: 250 },
          },
        ]),
      ),
    );
    await waitFor(
      async () => (await probe(loadPort).catch(() => undefined))?.status === 200,
      5000,
      'probes after reload',
    );
    expect(await reportsOn(port, '/')).toBe(1);
    const [attached, passed, probes] = await counts(proxy);
    expect([attached, passed]).toEqual([2, 0]);
    // The waits for the new load port may have read it more than once.
    expect(probes).toBeGreaterThanOrEqual(2);
  });
});
