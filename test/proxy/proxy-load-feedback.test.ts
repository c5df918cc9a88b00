/**
 * The proxy's clusters read what responses say of their endpoint, as every transport does:
 * over HTTP/1.1 and HTTP/2 upstreams, a `reportLoad` server's `endpoint-load-metrics` header is
 * recorded when the cluster's policy reads reports (`report-weighted`), and an endpoint
 * answering 429 (HTTP/1.1) or RESOURCE_EXHAUSTED (h2, in trailers) is pushed back: it gets well
 * below the others' share while it does.
 */
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { reportLoad } from '../../src/server/index.js';
import { nextLoopbackAddress } from '../support/loopback-pods.js';
import { h2StatusOf, startProxy, statusOf } from './helpers.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Upstream {
  readonly key: string;
  hits: number;
  /** Push back on every other request. */
  pushing: boolean;
}

async function h1Upstream(report: boolean): Promise<Upstream> {
  const address = nextLoopbackAddress();
  const u: Upstream = { key: '', hits: 0, pushing: false };
  const server = http.createServer((req, res) => {
    req.resume();
    u.hits++;
    res.writeHead(u.pushing && u.hits % 2 === 0 ? 429 : 200).end('ok');
  });
  if (report) {
    const reporting = reportLoad(server);
    cleanups.push(() => reporting.close());
  }
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return Object.assign(u, { key: `${address}:${(server.address() as AddressInfo).port}` });
}

/** A gRPC-like h2 upstream: status in trailers, a load report beside it. */
async function h2Upstream(): Promise<Upstream> {
  const address = nextLoopbackAddress();
  const u: Upstream = { key: '', hits: 0, pushing: false };
  const server = http2.createServer();
  server.on('stream', (stream) => {
    u.hits++;
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () =>
      stream.sendTrailers({
        'grpc-status': u.pushing ? '8' : '0',
        'endpoint-load-metrics': 'TEXT application_utilization=0.5, rps_fractional=100',
      }),
    );
    stream.end();
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return Object.assign(u, { key: `${address}:${(server.address() as AddressInfo).port}` });
}

async function proxyFor(protocol: 'http1' | 'h2', upstreams: readonly Upstream[], policy: string) {
  const proxy: ProxyServer = await startProxy({
    listeners: [{ name: 'main', address: '127.0.0.1:0' }],
    clusters: [
      {
        name: 'up',
        protocol,
        target: `static:///${upstreams.map((u) => u.key).join(',')}`,
        policy,
        outlierDetection: false,
      },
    ],
    routes: [{ hosts: ['*'], cluster: 'up' }],
  });
  cleanups.push(() => proxy.close());
  return { proxy, port: proxy.listenerPort('main') as number, stats: () => proxy.clusters.get('up')?.cluster.stats() };
}

const firstOverOthers = (ups: readonly Upstream[], before: readonly number[]) => {
  const counts = ups.map((u, i) => u.hits - (before[i] as number));
  return (counts[0] as number) / (counts.slice(1).reduce((a, b) => a + b, 0) / (counts.length - 1));
};

describe('proxy clusters read load reports and pushback', () => {
  it('HTTP/1.1 upstreams: reports recorded for report-weighted; a pod answering 429 to half gets well below the others', async () => {
    const ups = [await h1Upstream(true), await h1Upstream(true), await h1Upstream(true)];
    const { port, stats } = await proxyFor('http1', ups, 'report-weighted');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    cleanups.push(() => agent.destroy());
    for (let i = 0; i < 30; i++) expect(await statusOf(port, agent, '/')).toBe(200);
    expect(stats()?.loadReports).toEqual({ recorded: 30, ignored: 0 });

    const least = await proxyFor('http1', ups, 'least-request');
    (ups[0] as Upstream).pushing = true;
    const before = ups.map((u) => u.hits);
    for (let i = 0; i < 300; i++) await statusOf(least.port, agent, '/');
    expect(firstOverOthers(ups, before)).toBeLessThan(0.5);
    expect(least.stats()?.loadReports).toEqual({ recorded: 0, ignored: 0 });
    const pushbacks = least.stats()?.endpoints.find((e) => e.key === ups[0]?.key)?.pushbacks;
    expect(pushbacks).toBeGreaterThan(0);
  }, 30_000);

  it('h2 upstreams: the trailer report is recorded; RESOURCE_EXHAUSTED in trailers pushes back', async () => {
    const ups = [await h2Upstream(), await h2Upstream(), await h2Upstream()];
    const { port, stats } = await proxyFor('h2', ups, 'report-weighted');
    const session = http2.connect(`http://127.0.0.1:${port}`);
    cleanups.push(() => session.close());
    for (let i = 0; i < 30; i++) await h2StatusOf(session, '/', 'svc.test');
    expect(stats()?.loadReports).toEqual({ recorded: 30, ignored: 0 });

    const least = await proxyFor('h2', ups, 'least-request');
    const leastSession = http2.connect(`http://127.0.0.1:${least.port}`);
    cleanups.push(() => leastSession.close());
    (ups[0] as Upstream).pushing = true;
    const before = ups.map((u) => u.hits);
    for (let i = 0; i < 300; i++) await h2StatusOf(leastSession, '/', 'svc.test');
    expect(firstOverOthers(ups, before)).toBeLessThan(0.5);
    expect(least.stats()?.endpoints.find((e) => e.key === ups[0]?.key)?.pushbacks).toBeGreaterThan(0);
  }, 30_000);
});
