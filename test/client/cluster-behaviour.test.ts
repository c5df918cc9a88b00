/**
 * Cluster behaviour through the BalancedAgent, with real servers: waiting for discovery (and
 * giving up with EVENLB_DISCOVERY_PENDING), EVENLB_SERVICE_NOT_FOUND, opt-in retries of
 * idempotent requests, idle and age limits on connections, Prometheus metrics on the caller's
 * registry, and graceful close.
 */

import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { request } from 'undici';
import { describe, expect, test } from 'vitest';
import {
  BalancedAgent,
  BaseEndpointSource,
  clientMetricNames,
  type EndpointInput,
  EndpointSet,
  ManualClock,
  StaticEndpointSource,
} from '../../src/index.js';
import { type Pod, podsAndAgent, startPod, startPods, waitFor } from '../support/loopback-pods.js';

/** A source that answers only when told to. */
class ManualSource extends BaseEndpointSource {
  constructor() {
    super('manual:///');
  }
  publish(endpoints: EndpointInput[]): void {
    this.publishEndpoints(EndpointSet.from(endpoints));
  }
  protected onClose(): void {}
}

const ROUTE = 'inventory.shop.svc:80';
const URL = 'http://inventory.shop.svc/';

describe('cluster behaviour', () => {
  const fx = podsAndAgent<BalancedAgent>();

  const call = (path = '/', method: 'GET' | 'POST' = 'GET') =>
    request(`http://inventory.shop.svc${path}`, { dispatcher: fx.agent, method }).then(
      async (res) => ({ status: res.statusCode, body: (await res.body.text()).trim() }),
      (err: { code?: string }) => ({ status: 0, body: '', code: err.code }),
    );

  test('a request waits for the first discovery answer, up to discoveryTimeoutMs', async () => {
    fx.pods = await startPods(1);
    const source = new ManualSource();
    fx.agent = new BalancedAgent({ routes: { [ROUTE]: source }, discoveryTimeoutMs: 2_000 });
    const waiting = call();
    await new Promise((r) => setTimeout(r, 50));
    source.publish([(fx.pods[0] as Pod).endpoint]);
    expect((await waiting).status).toBe(200);

    const never = new ManualSource();
    const other = new BalancedAgent({ routes: { [ROUTE]: never }, discoveryTimeoutMs: 100 });
    try {
      const err = await request(URL, { dispatcher: other }).then(
        () => undefined,
        (e: { code?: string }) => e,
      );
      expect(err?.code).toBe('EVENLB_DISCOVERY_PENDING');
    } finally {
      await other.close();
    }
  });

  test('a Service that does not exist fails with EVENLB_SERVICE_NOT_FOUND', async () => {
    fx.agent = new BalancedAgent({
      routes: { [ROUTE]: `file://${join(tmpdir(), 'evenlb-no-such-file.json')}` },
      sourceOptions: { file: { logger: { warn() {}, info() {} } } },
    });
    const r = await call();
    expect(r).toMatchObject({ status: 0, code: 'EVENLB_SERVICE_NOT_FOUND' });
  });

  test('retryIdempotent retries GET on a 503 elsewhere, never POST', async () => {
    const bad = await startPod({ status: 503 });
    const good = await startPod();
    fx.pods = [bad, good];
    fx.agent = new BalancedAgent({
      routes: { [ROUTE]: new StaticEndpointSource([bad.endpoint, good.endpoint]) },
      policy: 'round-robin',
      retryIdempotent: 1,
      outlierDetection: false,
      // 503 is also pushback: without the penalty the bad pod keeps its turns, so POSTs meet it.
      pushback: false,
    });
    for (let i = 0; i < 6; i++) expect(await call()).toEqual({ status: 200, body: good.address });
    const posts = [];
    for (let i = 0; i < 6; i++) posts.push((await call('/', 'POST')).status);
    expect(posts.filter((s) => s === 503).length).toBeGreaterThan(0);
  });

  // Both limits run on a ManualClock: the connections' ages and idle times are simulated, so
  // the counts below are exact however slow the machine is (they once counted connections in
  // a 450 ms wall-clock window and failed under load).
  test('idleTimeoutMs closes idle connections; maxConnectionAgeMs rotates busy ones', async () => {
    const pod = await startPod({ keepAliveTimeoutMs: 30_000 });
    fx.pods = [pod];
    const idleClock = new ManualClock(1_000_000);
    fx.agent = new BalancedAgent({
      routes: { [ROUTE]: new StaticEndpointSource([pod.endpoint]) },
      idleTimeoutMs: 150,
      clock: idleClock,
    });
    const openConnections = (agent: BalancedAgent) => agent.stats().routes[0]?.endpoints[0]?.openConnections;
    await call();
    expect(pod.openSockets).toBe(1);
    // One simulated millisecond short of the limit the connection is still open and reused.
    idleClock.advance(149);
    expect(openConnections(fx.agent)).toBe(1);
    await call();
    expect(pod.socketsOpened).toBe(1);
    // The second request restarted the idle time: 149 ms on, still open; at 150 ms it closes.
    idleClock.advance(149);
    expect(openConnections(fx.agent)).toBe(1);
    idleClock.advance(1);
    await waitFor(() => pod.openSockets === 0, 'the idle connection to close', 10_000);
    expect(pod.socketsOpened).toBe(1);
    await fx.agent.close();

    const ageClock = new ManualClock(1_000_000);
    fx.agent = new BalancedAgent({
      routes: { [ROUTE]: new StaticEndpointSource([pod.endpoint]) },
      maxConnectionAgeMs: 100,
      ageJitter: 0,
      clock: ageClock,
    });
    const before = pod.socketsOpened;
    // Steady traffic: one request every 20 simulated ms for 450 ms (23 requests, t = 0…440).
    // Each connection lives 100 ms, so connections open at t = 0, 100, 200, 300 and 400.
    for (let t = 0; t <= 440; t += 20) {
      expect((await call()).status).toBe(200);
      ageClock.advance(20);
    }
    expect(pod.socketsOpened - before).toBe(5);
    // Each connection carried the requests of its 100 ms: 5, 5, 5, 5, then 3 (t = 400…440).
    const perConnection = [...pod.requestsPerSocket].filter(([id]) => id > before).map(([, n]) => n);
    expect(perConnection).toEqual([5, 5, 5, 5, 3]);
  });

  test('Prometheus metrics on the caller registry', async () => {
    fx.pods = await startPods(2);
    const registry = new Registry();
    fx.agent = new BalancedAgent({
      name: 'checkout',
      routes: { [ROUTE]: new StaticEndpointSource(fx.pods.map((p) => p.endpoint)) },
      // Sequential requests: least-request would break its all-zero ties at random.
      policy: 'round-robin',
      metrics: { registry },
    });
    for (let i = 0; i < 10; i++) await call();
    const text = await registry.metrics();
    for (const name of Object.values(clientMetricNames)) expect(text).toContain(`# HELP ${name} `);
    const requests = await registry.getSingleMetric(clientMetricNames.requests)?.get();
    const total = requests?.values.reduce((n, v) => n + v.value, 0);
    expect(total).toBe(10);
    expect(requests?.values.every((v) => v.labels.client === 'checkout' && v.labels.route === ROUTE)).toBe(true);
    const jain = await registry.getSingleMetric(clientMetricNames.imbalanceJain)?.get();
    expect(jain?.values[0]?.value).toBe(1);
    // A second agent on the same registry shares the instruments.
    const second = new BalancedAgent({ name: 'second', routes: {}, metrics: { registry } });
    await second.close();
  });

  test('close(): in-flight requests finish, new ones fail with EVENLB_CLOSED', async () => {
    fx.pods = await startPods(1, { delayMs: 200 });
    fx.agent = new BalancedAgent({ routes: { [ROUTE]: new StaticEndpointSource(fx.pods.map((p) => p.endpoint)) } });
    const inFlight = call();
    await (fx.pods[0] as Pod).waitForInFlight(1);
    const closing = fx.agent.close();
    expect(await call()).toMatchObject({ status: 0, code: 'EVENLB_CLOSED' });
    expect((await inFlight).status).toBe(200);
    await closing;
    await waitFor(() => (fx.pods[0] as Pod).openSockets === 0, 'the server to see the socket close', 2_000);
  });

  test('close() also finishes requests queued for a connection', async () => {
    fx.pods = await startPods(1, { delayMs: 50 });
    fx.agent = new BalancedAgent({
      routes: { [ROUTE]: new StaticEndpointSource(fx.pods.map((p) => p.endpoint)) },
      connectionsPerEndpoint: 1,
    });
    const calls = Array.from({ length: 3 }, () => call());
    await (fx.pods[0] as Pod).waitForInFlight(1);
    await fx.agent.close();
    expect((await Promise.all(calls)).map((r) => r.status)).toEqual([200, 200, 200]);
  });
});
