/**
 * One retry policy for the client and the proxy: the same upstream failure is retried the same
 * way through `BalancedAgent` and through the proxy's HTTP/1.1 data path — the same number of
 * upstream attempts (seen by the servers and in the cluster's per-endpoint stats), the same
 * final statuses, the same retries counted once in the cluster's stats (and, for the client,
 * `evenlb_client_retries_total`, for the proxy `evenlb_proxy_upstream_retries_total`). Real servers on loopback, table-driven:
 *
 * - connect refused → retried on the other endpoint (`connect-failure`);
 * - a kept-alive upstream socket reset before any answer → retried once on a fresh socket,
 *   with `retries.idempotent: 0` (`reused-connection`);
 * - 503 (the default `retryOn`) with one idempotent retry allowed → retried elsewhere (`idempotent`).
 *
 * The proxy is reached both by an HTTP/1.1 client (its data path) and by an HTTP/2 client
 * (forwarded to the HTTP/1.1 upstream over the same attempts and socket pool).
 *
 * Round-robin starts at a random offset; one request before measuring puts both on the same
 * step (the next pick is the failing endpoint), then the deltas are compared.
 */
import http from 'node:http';
import http2 from 'node:http2';
import { Registry } from 'prom-client';
import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import type { ClusterStats } from '../../src/cluster/cluster-stats.js';
import { BalancedAgent, type ClusterSettings, clientMetricNames, StaticEndpointSource } from '../../src/index.js';
import { type ProxyServer, proxyMetricNames } from '../../src/proxy/index.js';
import { type FailureBehaviour, type FailureServer, startFailureServer } from '../support/failure-server.js';
import { h2StatusOf, startProxy, statusOf } from './helpers.js';

interface Case {
  readonly name: string;
  readonly servers: FailureBehaviour[];
  readonly client: ClusterSettings;
  readonly proxy: Record<string, unknown>;
  readonly requests: number;
  readonly reason: 'connect-failure' | 'reused-connection' | 'idempotent';
}

const cases: Case[] = [
  {
    name: 'connect refused',
    servers: ['refused', 'ok'],
    client: { policy: 'round-robin', outlierDetection: false },
    proxy: { policy: 'round-robin', outlierDetection: false },
    requests: 6,
    reason: 'connect-failure',
  },
  {
    name: 'reset on a reused keep-alive socket, retries.idempotent 0',
    servers: ['reset-reused'],
    client: { connectionsPerEndpoint: 1, outlierDetection: false },
    proxy: { connectionsPerEndpoint: 1, outlierDetection: false, retries: { idempotent: 0 } },
    requests: 5,
    reason: 'reused-connection',
  },
  {
    name: '503 (retryOn) with one idempotent retry',
    servers: ['503', 'ok'],
    // 503 is also pushback; its random bias would make the two sides pick differently.
    client: { policy: 'round-robin', retryIdempotent: 1, outlierDetection: false, pushback: false },
    proxy: { policy: 'round-robin', outlierDetection: false, retries: { idempotent: 1 }, pushback: false },
    requests: 6,
    reason: 'idempotent',
  },
];

interface Counts {
  readonly statuses: number[];
  readonly hits: number;
  /** Attempts per endpoint and failed attempts, from the cluster's stats. */
  readonly attempts: number;
  readonly errors: number;
  readonly retries: number;
  /** Retries in the metrics: `evenlb_client_retries_total`, or the proxy's `evenlb_proxy_upstream_retries_total`. */
  readonly metric?: number;
}

function fromStats(stats: ClusterStats): { attempts: number; errors: number; retries: number } {
  return {
    attempts: stats.endpoints.reduce((n, e) => n + e.requests, 0),
    errors: stats.endpoints.reduce((n, e) => n + e.errors, 0),
    retries: stats.retries,
  };
}

function delta(before: ReturnType<typeof fromStats>, after: ReturnType<typeof fromStats>) {
  return {
    attempts: after.attempts - before.attempts,
    errors: after.errors - before.errors,
    retries: after.retries - before.retries,
  };
}

describe('one retry policy through the client and through the proxy', () => {
  const stop: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const s of stop.splice(0).reverse()) await s();
  });

  async function servers(c: Case): Promise<FailureServer[]> {
    const list: FailureServer[] = [];
    for (const b of c.servers) list.push(await startFailureServer(b));
    stop.push(async () => {
      for (const s of list) await s.close();
    });
    return list;
  }

  async function viaClient(c: Case): Promise<Counts & { metric: number }> {
    const list = await servers(c);
    const registry = new Registry();
    const agent = new BalancedAgent({
      ...c.client,
      routes: { 'svc.test:80': new StaticEndpointSource(list.map((s) => ({ address: s.address, port: s.port }))) },
      metrics: { registry },
    });
    stop.push(() => agent.destroy());
    const get = async (i: number) => {
      const r = await request(`http://svc.test/r${i}`, { dispatcher: agent });
      await r.body.text();
      return r.statusCode;
    };
    await get(-1);
    const cluster = agent.clusters()[0];
    if (cluster === undefined) throw new Error('no cluster');
    const before = fromStats(cluster.stats());
    const hits = list.reduce((n, s) => n + s.hits, 0);
    const metricBefore = await retriesMetric(registry);
    const statuses: number[] = [];
    for (let i = 0; i < c.requests; i++) statuses.push(await get(i));
    return {
      statuses,
      hits: list.reduce((n, s) => n + s.hits, 0) - hits,
      ...delta(before, fromStats(cluster.stats())),
      metric: (await retriesMetric(registry)) - metricBefore,
    };
  }

  async function viaProxy(c: Case, client: 'http1' | 'h2'): Promise<Counts> {
    const list = await servers(c);
    const proxy: ProxyServer = await startProxy({
      listeners: [{ name: 'main', address: '127.0.0.1:0' }],
      clusters: [{ name: 'svc', target: `static:///${list.map((s) => s.key).join(',')}`, ...c.proxy }],
      routes: [{ hosts: ['svc.test'], cluster: 'svc' }],
    });
    stop.push(() => proxy.close());
    const port = proxy.listenerPort('main') as number;
    let get: (path: string) => Promise<number>;
    if (client === 'http1') {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      stop.push(async () => agent.destroy());
      get = (path) => statusOf(port, agent, path);
    } else {
      const session = http2.connect(`http://127.0.0.1:${port}`);
      stop.push(async () => {
        session.close();
      });
      get = (path) => h2StatusOf(session, path);
    }
    await get('/r-1');
    const cluster = proxy.clusters.get('svc')?.cluster;
    if (cluster === undefined) throw new Error('no cluster');
    const before = fromStats(cluster.stats());
    const metricBefore = await counterSum(proxy.metrics.registry, proxyMetricNames.upstreamRetries);
    const hits = list.reduce((n, s) => n + s.hits, 0);
    const statuses: number[] = [];
    for (let i = 0; i < c.requests; i++) statuses.push(await get(`/r${i}`));
    return {
      statuses,
      hits: list.reduce((n, s) => n + s.hits, 0) - hits,
      ...delta(before, fromStats(cluster.stats())),
      metric: (await counterSum(proxy.metrics.registry, proxyMetricNames.upstreamRetries)) - metricBefore,
    };
  }

  async function retriesMetric(registry: Registry): Promise<number> {
    return counterSum(registry, clientMetricNames.retries);
  }

  async function counterSum(registry: Registry, name: string): Promise<number> {
    const metric = registry.getSingleMetric(name);
    if (metric === undefined) return 0;
    return (await metric.get()).values.reduce((n, v) => n + v.value, 0);
  }

  for (const c of cases) {
    test(c.name, async () => {
      const client = await viaClient(c);
      // The failure happened and was retried: every request answered 200 after one retry.
      expect(client.statuses).toEqual(client.statuses.map(() => 200));
      expect(client.retries).toBe(c.requests);
      expect(client.metric).toBe(client.retries);
      expect(client.attempts).toBe(2 * c.requests);
      // ... and the proxy did exactly the same, counted in the same stats, whatever its client spoke.
      const same = {
        statuses: client.statuses,
        hits: client.hits,
        attempts: client.attempts,
        errors: client.errors,
        retries: client.retries,
        metric: client.metric,
      };
      expect(await viaProxy(c, 'http1')).toEqual(same);
      expect(await viaProxy(c, 'h2')).toEqual(same);
    });
  }
});
