/**
 * `retries.connectFailures` for `h2` clusters and `tcp` listeners: both take their attempts
 * from the cluster, so a refused upstream connect goes through the cluster's one retry policy
 * and is counted once — in the cluster's stats (`retries`) and in
 * `evenlb_proxy_upstream_retries_total{reason="connect-failure"}` — as for HTTP/1.1 clusters.
 * Real sockets on loopback: 3 endpoints, 2 of them refusing connections, round-robin (each
 * retry moves on to the next endpoint), outlier detection off so every request meets them.
 *
 * - `connectFailures: 2`: every stream / connection succeeds; retries equal the refused
 *   connects observed (the attempts the cluster sent to the refusing endpoints).
 * - `connectFailures: 0`: each refused connect fails its stream / connection; no retry.
 * - The cluster's `requests` count h2 streams (and TCP connections), once each, whatever the retries.
 */
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import type { ClusterStats } from '../../src/cluster/cluster-stats.js';
import { proxyMetricNames } from '../../src/metrics/proxy-metrics.js';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { nextLoopbackAddress } from '../support/loopback-pods.js';
import { freePort } from '../support/tracked-server.js';
import { h2StatusOf, startProxy } from './helpers.js';

const REQUESTS = 9;

type Kind = 'h2' | 'tcp';

interface Upstream {
  readonly key: string;
  close(): Promise<void>;
}

/** A backend that answers: an h2c server replying 200, or a TCP server echoing `ok:` + data. */
async function liveBackend(kind: Kind): Promise<Upstream> {
  const address = nextLoopbackAddress();
  const sockets = new Set<net.Socket>();
  let server: net.Server;
  if (kind === 'h2') {
    const h2 = http2.createServer();
    h2.on('stream', (stream) => {
      stream.respond({ ':status': 200 });
      stream.end('ok');
    });
    server = h2;
  } else {
    server = net.createServer((s) => {
      s.on('error', () => {});
      s.on('data', (d) => s.write(`ok:${d.toString()}`));
    });
  }
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, address, r));
  const key = `${address}:${(server.address() as AddressInfo).port}`;
  return {
    key,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** An endpoint whose connects are refused (a port that was free a moment ago). */
async function refusingEndpoint(): Promise<string> {
  const address = nextLoopbackAddress();
  return `${address}:${await freePort(address)}`;
}

/** One TCP connection through the proxy: true when the backend's echo came back. */
function tcpRoundTrip(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    let got = '';
    s.on('error', () => {});
    s.on('data', (d) => {
      got += d.toString();
      if (got === 'ok:ping') s.end();
    });
    s.on('connect', () => s.write('ping'));
    s.on('close', () => resolve(got === 'ok:ping'));
  });
}

async function connectRetriesMetric(proxy: ProxyServer): Promise<number> {
  const metric = proxy.metrics.registry.getSingleMetric(proxyMetricNames.upstreamRetries);
  if (metric === undefined) return 0;
  const values = (await metric.get()).values;
  return values
    .filter((v) => v.labels.cluster === 'svc' && v.labels.reason === 'connect-failure')
    .reduce((n, v) => n + v.value, 0);
}

interface Run {
  readonly ok: number;
  readonly failed: number;
  /** Attempts the cluster sent to the refusing endpoints: the refused connects. */
  readonly refused: number;
  readonly stats: ClusterStats;
  readonly metric: number;
}

describe('connect-failure retries for h2 clusters and tcp listeners go through the cluster', () => {
  const stop: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const s of stop.splice(0).reverse()) await s();
  });

  async function run(kind: Kind, connectFailures: number): Promise<Run> {
    const live = await liveBackend(kind);
    stop.push(() => live.close());
    const refusing = [await refusingEndpoint(), await refusingEndpoint()];
    const target = `static:///${[...refusing, live.key].join(',')}`;
    const cluster = {
      name: 'svc',
      target,
      policy: 'round-robin',
      outlierDetection: false,
      // No idempotent retries: past `connectFailures`, a connect failure of a GET would be one.
      retries: { connectFailures, idempotent: 0 },
      ...(kind === 'h2' ? { protocol: 'h2' } : {}),
    };
    const proxy = await startProxy(
      kind === 'h2'
        ? {
            listeners: [{ name: 'main', address: '127.0.0.1:0' }],
            clusters: [cluster],
            routes: [{ hosts: ['svc.test'], cluster: 'svc' }],
          }
        : {
            listeners: [{ name: 'main', address: '127.0.0.1:0', protocol: 'tcp', cluster: 'svc' }],
            clusters: [cluster],
          },
    );
    stop.push(() => proxy.destroy());
    await proxy.clusters.get('svc')?.ready();
    const port = proxy.listenerPort('main') as number;
    let ok = 0;
    if (kind === 'h2') {
      const session = http2.connect(`http://127.0.0.1:${port}`);
      session.on('error', () => {});
      stop.push(async () => {
        session.destroy();
      });
      for (let i = 0; i < REQUESTS; i++) if ((await h2StatusOf(session, `/r${i}`)) === 200) ok++;
    } else {
      for (let i = 0; i < REQUESTS; i++) if (await tcpRoundTrip(port)) ok++;
    }
    const stats = proxy.clusters.get('svc')?.stats() as ClusterStats;
    const refused = stats.endpoints.filter((e) => refusing.includes(e.key)).reduce((n, e) => n + e.requests, 0);
    return { ok, failed: REQUESTS - ok, refused, stats, metric: await connectRetriesMetric(proxy) };
  }

  for (const kind of ['h2', 'tcp'] as const) {
    test(`${kind}: connectFailures 2 — every ${kind === 'h2' ? 'stream' : 'connection'} succeeds, each refused connect is one counted retry`, async () => {
      const r = await run(kind, 2);
      expect(r.ok).toBe(REQUESTS);
      // Round-robin over 2 refusing endpoints and 1 live one: the refused connects happened.
      expect(r.refused).toBeGreaterThanOrEqual(REQUESTS);
      expect(r.stats.retries).toBe(r.refused);
      expect(r.metric).toBe(r.refused);
      // Counted once per stream / connection, retries not included.
      expect(r.stats.requests).toBe(REQUESTS);
      const attempts = r.stats.endpoints.reduce((n, e) => n + e.requests, 0);
      expect(attempts).toBe(REQUESTS + r.refused);
      expect(r.stats.errors).toBe(r.refused);
    });

    test(`${kind}: connectFailures 0 — each refused connect fails, nothing is retried`, async () => {
      const r = await run(kind, 0);
      expect(r.refused).toBeGreaterThan(0);
      expect(r.failed).toBe(r.refused);
      expect(r.ok).toBe(REQUESTS - r.refused);
      expect(r.stats.retries).toBe(0);
      expect(r.metric).toBe(0);
      expect(r.stats.requests).toBe(REQUESTS);
    });
  }
});
