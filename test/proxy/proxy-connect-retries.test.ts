/**
 * How many endpoints a refused connection is retried on is one setting of the cluster's one
 * retry policy, whatever carries the request: `retryConnectFailures` for the client, the
 * proxy's `retries.connectFailures` for its HTTP/1.1 clusters (which once always retried once).
 * Two of three endpoints refuse connections, round robin, outlier detection off: with 2 extra
 * endpoints allowed every request succeeds, with 0 requests that meet a refusing endpoint fail
 * and nothing is retried — in both carriers, the retries counted in the cluster's stats.
 */
import { createServer } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import { BalancedAgent, StaticEndpointSource } from '../../src/index.js';
import { nextLoopbackAddress } from '../support/loopback-pods.js';
import { type Backend, startBackend, startProxy } from './helpers.js';

const REQUESTS = 9;

/** An address:port where nothing listens (bound, then closed): connections are refused. */
async function refusingEndpoint(): Promise<{ address: string; port: number }> {
  const address = nextLoopbackAddress();
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return { address, port };
}

describe('connect-failure retries follow the one setting, in the client and in the proxy', () => {
  const stop: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const s of stop.splice(0).reverse()) await s();
  });

  async function endpoints(): Promise<{ list: { address: string; port: number }[]; ok: Backend }> {
    const ok = await startBackend('ok', nextLoopbackAddress());
    stop.push(() => ok.close());
    return { list: [await refusingEndpoint(), await refusingEndpoint(), { address: ok.address, port: ok.port }], ok };
  }

  async function viaClient(retries: number): Promise<{ statuses: number[]; retries: number }> {
    const { list } = await endpoints();
    const agent = new BalancedAgent({
      policy: 'round-robin',
      outlierDetection: false,
      retryConnectFailures: retries,
      routes: { 'svc.test:80': new StaticEndpointSource(list) },
    });
    stop.push(() => agent.destroy());
    const statuses: number[] = [];
    for (let i = 0; i < REQUESTS; i++) {
      try {
        const r = await request(`http://svc.test/c${i}`, { dispatcher: agent });
        await r.body.text();
        statuses.push(r.statusCode);
      } catch {
        statuses.push(0);
      }
    }
    return { statuses, retries: agent.clusters()[0]?.stats().retries ?? -1 };
  }

  async function viaProxy(retries: number): Promise<{ statuses: number[]; retries: number }> {
    const { list } = await endpoints();
    const proxy = await startProxy({
      listeners: [{ name: 'main', address: '127.0.0.1:0' }],
      clusters: [
        {
          name: 'svc',
          target: `static:///${list.map((e) => `${e.address}:${e.port}`).join(',')}`,
          policy: 'round-robin',
          outlierDetection: false,
          // The proxy's default also retries idempotent requests once; off here, as the client's is.
          retries: { connectFailures: retries, idempotent: 0 },
        },
      ],
      routes: [{ hosts: ['svc.test'], cluster: 'svc' }],
    });
    stop.push(() => proxy.close());
    const port = proxy.listenerPort('main') as number;
    const statuses: number[] = [];
    for (let i = 0; i < REQUESTS; i++) {
      const r = await request(`http://127.0.0.1:${port}/c${i}`, { headers: { host: 'svc.test' } });
      await r.body.text();
      statuses.push(r.statusCode);
    }
    return { statuses, retries: proxy.clusters.get('svc')?.cluster.stats().retries ?? -1 };
  }

  test('2 extra endpoints: every request succeeds, through the client and through the proxy', async () => {
    const client = await viaClient(2);
    const proxy = await viaProxy(2);
    expect(client.statuses).toEqual(new Array(REQUESTS).fill(200));
    expect(proxy.statuses).toEqual(client.statuses);
    // Where round robin starts differs between the two, so the exact count may too.
    expect(client.retries).toBeGreaterThan(0);
    expect(proxy.retries).toBeGreaterThan(0);
    expect(client.retries).toBeLessThanOrEqual(2 * REQUESTS);
    expect(proxy.retries).toBeLessThanOrEqual(2 * REQUESTS);
  });

  test('0 extra endpoints: requests that meet a refusing endpoint fail, nothing retried, in both', async () => {
    const client = await viaClient(0);
    const proxy = await viaProxy(0);
    expect(client.statuses.filter((s) => s !== 200).length).toBeGreaterThan(0);
    expect(proxy.statuses.filter((s) => s !== 200).length).toBeGreaterThan(0);
    expect(client.retries).toBe(0);
    expect(proxy.retries).toBe(0);
    expect(proxy.statuses.filter((s) => s !== 200).every((s) => s === 502 || s === 503)).toBe(true);
  });
});
