/**
 * One stats model: what the proxy serves (`/endpoints`, `/api/stats`, the gauges) is each
 * cluster's `Cluster.stats()` — the same field names and meanings — plus the latency quantiles
 * only the proxy measures. Every transport's connections are counted by the cluster itself:
 * HTTP/1.1 upstream sockets, HTTP/2 sessions (`protocol: h2`) and TCP connections (L4
 * listeners) show as the endpoint's `openConnections`, and `evenlb_proxy_upstream_connections`
 * reads that field; idle sockets (sessions) and waiting requests come from the transport.
 */
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { proxyMetricNames } from '../../src/metrics/proxy-metrics.js';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { nextLoopbackAddress } from '../support/loopback-pods.js';
import { type Backend, fetchText, h2StatusOf, startBackend, startProxy, statusOf, waitFor } from './helpers.js';

interface Servers {
  readonly keys: string[];
  close(): void;
}

async function listen(server: net.Server | http2.Http2Server, keys: string[]): Promise<void> {
  const address = nextLoopbackAddress();
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  keys.push(`${address}:${(server.address() as net.AddressInfo).port}`);
}

/** Two TCP servers that hold every connection open and count them. */
async function tcpServers(): Promise<Servers & { open(): number }> {
  const keys: string[] = [];
  let open = 0;
  const servers = [net.createServer(), net.createServer()];
  for (const s of servers) {
    s.on('connection', (c) => {
      open++;
      c.on('close', () => open--);
      c.on('error', () => {});
    });
    await listen(s, keys);
  }
  return {
    keys,
    open: () => open,
    close: () => {
      for (const s of servers) s.close();
    },
  };
}

/** Two h2c servers answering 200. */
async function h2Servers(): Promise<Servers> {
  const keys: string[] = [];
  const servers = [http2.createServer(), http2.createServer()];
  for (const s of servers) {
    s.on('stream', (stream) => {
      stream.respond({ ':status': 200 });
      stream.end('ok');
    });
    await listen(s, keys);
  }
  return {
    keys,
    close: () => {
      for (const s of servers) s.close();
    },
  };
}

let web: Backend[] = [];
let tcp: Awaited<ReturnType<typeof tcpServers>>;
let h2: Servers;
let proxy: ProxyServer;

beforeAll(async () => {
  web = await Promise.all([1, 2].map((i) => startBackend(`w${i}`, nextLoopbackAddress())));
  tcp = await tcpServers();
  h2 = await h2Servers();
  proxy = await startProxy({
    listeners: [
      { name: 'main', address: '127.0.0.1:0' },
      { name: 'l4', address: '127.0.0.1:0', protocol: 'tcp', cluster: 'tcp' },
    ],
    clusters: [
      { name: 'web', target: `static:///${web.map((b) => b.key).join(',')}`, policy: 'round-robin' },
      { name: 'tcp', target: `static:///${tcp.keys.join(',')}`, policy: 'round-robin' },
      { name: 'h2', protocol: 'h2', target: `static:///${h2.keys.join(',')}`, policy: 'round-robin' },
    ],
    routes: [
      { hosts: ['h2.test'], cluster: 'h2' },
      { hosts: ['*'], cluster: 'web' },
    ],
    admin: { address: '127.0.0.1:0' },
  });
});

afterAll(async () => {
  await proxy?.destroy();
  await Promise.all(web.map((b) => b.close()));
  tcp?.close();
  h2?.close();
});

interface EndpointJson {
  key: string;
  requests: number;
  windowRequests: number;
  openConnections: number;
  idleConnections: number;
  state: string;
  p50Ms: number | null;
  p99Ms: number | null;
}
interface ClusterJson {
  name: string;
  endpoints: EndpointJson[];
  window: { windowMs: number; imbalance: { maxOverMean: number } };
  zones: { zone: string; share: number }[];
}

async function served(): Promise<ClusterJson[]> {
  return JSON.parse((await fetchText(proxy.adminPort as number, '/endpoints')).body).clusters as ClusterJson[];
}

/** The proxy computes its figures at most once per 100 ms: wait for a scrape to show `expected`. */
async function gaugeShows(cluster: string, expected: number): Promise<void> {
  await waitFor(async () => (await connectionGauge(cluster)) === expected, 5000, `${cluster} connections ${expected}`);
}

async function connectionGauge(cluster: string): Promise<number> {
  const text = (await fetchText(proxy.adminPort as number, '/metrics')).body;
  const re = new RegExp(
    `^${proxyMetricNames.upstreamConnections}\\{cluster="${cluster}",endpoint="[^"]+"\\} (\\d+)$`,
    'gm',
  );
  let sum = 0;
  for (const m of text.matchAll(re)) sum += Number(m[1]);
  return sum;
}

describe('proxy stats are the cluster stats', () => {
  it("serves Cluster.stats()'s fields, the same values, plus the measured p50/p99 and the proxy's window", async () => {
    const agent = new http.Agent({ keepAlive: true });
    try {
      for (let i = 0; i < 20; i++) expect(await statusOf(proxy.listenerPort('main') as number, agent, '/')).toBe(200);
    } finally {
      agent.destroy();
    }
    // Every response is in: each endpoint's keep-alive socket is open and idle, as the transport tells.
    const web0 = () => proxy.clusters.get('web')?.stats().endpoints ?? [];
    await waitFor(
      () => web0().every((e) => e.openConnections >= 1 && e.idleConnections === e.openConnections),
      5000,
      'idle sockets',
    );
    expect(web0().map((e) => e.queued)).toEqual([0, 0]);
    const own = proxy.clusters.get('web')?.cluster.stats();
    const shown = (await served()).find((c) => c.name === 'web');
    expect(own).toBeDefined();
    expect(shown).toBeDefined();
    // Same names: every field of the cluster's model is there, and only p50Ms/p99Ms are added.
    expect(Object.keys(shown ?? {}).sort()).toEqual(Object.keys(own ?? {}).sort());
    for (const e of shown?.endpoints ?? []) {
      const base = own?.endpoints.find((x) => x.key === e.key);
      expect(Object.keys(e).sort()).toEqual([...Object.keys(base ?? {}), 'p50Ms', 'p99Ms'].sort());
      expect(e.requests).toBe(base?.requests);
      expect(e.requests).toBe(10);
      expect(e.state).toBe('eligible');
      // The proxy's window (imbalanceWindowMs) counts every request sent since it started.
      expect(e.windowRequests).toBe(10);
      expect(e.p50Ms).not.toBeNull();
    }
    expect(shown?.window.windowMs).toBe(proxy.config.imbalanceWindowMs);
    expect(shown?.window.imbalance.maxOverMean).toBe(1);
    expect(shown?.zones).toEqual([{ zone: '', endpoints: 2, windowRequests: 20, share: 1 }]);
  });

  it('counts TCP connections of an L4 listener as the endpoints open connections, and their close', async () => {
    const port = proxy.listenerPort('l4') as number;
    const sockets: net.Socket[] = [];
    for (let i = 0; i < 4; i++) {
      const s = net.connect({ port, host: '127.0.0.1' });
      s.on('error', () => {});
      sockets.push(s);
    }
    await waitFor(() => tcp.open() === 4, 5000, 'four upstream connections');
    const open = () =>
      proxy.clusters
        .get('tcp')
        ?.cluster.stats()
        .endpoints.map((e) => e.openConnections) ?? [];
    await waitFor(() => open().reduce((a, b) => a + b, 0) === 4, 5000, 'four connections in the stats');
    expect(open()).toEqual([2, 2]);
    const opened = proxy.clusters
      .get('tcp')
      ?.cluster.stats()
      .endpoints.map((e) => e.connectionsOpened);
    expect(opened).toEqual([2, 2]);
    await gaugeShows('tcp', 4);
    expect((await served()).find((c) => c.name === 'tcp')?.endpoints.map((e) => e.openConnections)).toEqual([2, 2]);
    for (const s of sockets) s.destroy();
    await waitFor(() => open().reduce((a, b) => a + b, 0) === 0, 5000, 'connections closed in the stats');
    await gaugeShows('tcp', 0);
  });

  it('counts HTTP/2 upstream sessions of an h2 cluster as the endpoints open connections', async () => {
    const session = http2.connect(`http://127.0.0.1:${proxy.listenerPort('main') as number}`);
    try {
      for (let i = 0; i < 6; i++) expect(await h2StatusOf(session, '/', 'h2.test')).toBe(200);
      const open = () =>
        proxy.clusters
          .get('h2')
          ?.cluster.stats()
          .endpoints.map((e) => e.openConnections) ?? [];
      expect(open()).toEqual([1, 1]);
      const idle = () =>
        proxy.clusters
          .get('h2')
          ?.stats()
          .endpoints.map((e) => e.idleConnections) ?? [];
      await waitFor(() => idle().join() === '1,1', 5000, 'idle sessions');
      await gaugeShows('h2', 2);
      const shown = (await served()).find((c) => c.name === 'h2');
      expect(shown?.endpoints.map((e) => e.windowRequests)).toEqual([3, 3]);
    } finally {
      session.close();
    }
  });
});
