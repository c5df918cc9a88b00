/**
 * Connection pools per endpoint: concurrency opens connections and idle ones are reused;
 * `maxRequestsPerConnection: N` puts exactly N requests on every full server-side socket
 * (undici's own `maxRequestsPerClient` would allow N+1).
 */
import { request } from 'undici';
import { describe, expect, test } from 'vitest';
import { BalancedAgent, StaticEndpointSource } from '../../src/index.js';
import { podsAndAgent, startPod } from '../support/loopback-pods.js';

const ROUTE = 'api.prod.svc:80';

describe('connection reuse and lifetime', () => {
  const fx = podsAndAgent<BalancedAgent>();

  const get = async (path = '/') => {
    const res = await request(`http://api.prod.svc${path}`, { dispatcher: fx.agent });
    await res.body.text();
    return res.statusCode;
  };

  test('10 concurrent slow requests open >= 10 connections; a second batch opens none', async () => {
    const pod = await startPod({ delayMs: 150, keepAliveTimeoutMs: 30_000 });
    fx.pods = [pod];
    fx.agent = new BalancedAgent({ routes: { [ROUTE]: new StaticEndpointSource([pod.endpoint]) } });
    const batch = () => Promise.all(Array.from({ length: 10 }, () => get()));
    expect(await batch()).toEqual(Array(10).fill(200));
    const opened = pod.socketsOpened;
    expect(opened).toBeGreaterThanOrEqual(10);
    expect(await batch()).toEqual(Array(10).fill(200));
    expect(pod.socketsOpened).toBe(opened);
    const stats = fx.agent.stats().routes[0]?.endpoints[0];
    expect(stats?.openConnections).toBe(opened);
    expect(stats?.connectionsOpened).toBe(opened);
  });

  test('maxRequestsPerConnection: 10 → exactly 10 requests on each full socket (sequential)', async () => {
    const pod = await startPod({ keepAliveTimeoutMs: 30_000 });
    fx.pods = [pod];
    fx.agent = new BalancedAgent({
      routes: { [ROUTE]: new StaticEndpointSource([pod.endpoint]) },
      maxRequestsPerConnection: 10,
    });
    for (let i = 0; i < 100; i++) expect(await get()).toBe(200);
    expect([...pod.requestsPerSocket.values()]).toEqual(Array(10).fill(10));
  });

  test('maxRequestsPerConnection: 10 with 4 concurrent callers: no socket carries more than 10', async () => {
    const pod = await startPod({ keepAliveTimeoutMs: 30_000, delayMs: 2 });
    fx.pods = [pod];
    fx.agent = new BalancedAgent({
      routes: { [ROUTE]: new StaticEndpointSource([pod.endpoint]) },
      maxRequestsPerConnection: 10,
    });
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 50; i++) expect(await get()).toBe(200);
      }),
    );
    const counts = [...pod.requestsPerSocket.values()];
    expect(counts.reduce((a, b) => a + b, 0)).toBe(200);
    expect(Math.max(...counts)).toBe(10);
    // Every socket the client retired carried exactly 10; only sockets still open may carry fewer.
    const closedFull = [...pod.requestsPerSocket.entries()].filter(([id]) => pod.closedAt.has(id));
    for (const [, n] of closedFull) expect(n).toBe(10);
    expect(counts.filter((n) => n < 10).length).toBeLessThanOrEqual(4);
  });

  test('connectionsPerEndpoint: 2 caps sockets; extra requests queue and all complete', async () => {
    const pod = await startPod({ delayMs: 50, keepAliveTimeoutMs: 30_000 });
    fx.pods = [pod];
    fx.agent = new BalancedAgent({
      routes: { [ROUTE]: new StaticEndpointSource([pod.endpoint]) },
      connectionsPerEndpoint: 2,
    });
    expect(await Promise.all(Array.from({ length: 10 }, () => get()))).toEqual(Array(10).fill(200));
    expect(pod.socketsOpened).toBe(2);
    expect([...pod.requestsPerSocket.values()].sort()).toEqual([5, 5]);
  });
});
