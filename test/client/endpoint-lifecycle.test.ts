/**
 * Endpoint lifecycle with real sockets: an endpoint that leaves the eligible set (removed, not
 * ready, or terminating while another is ready) gets no new request, its idle connections
 * close at once (seen at the server), its in-flight requests finish. Terminating-but-serving
 * endpoints are used only when nothing is ready. A backend killed mid-run fails no GET: the
 * ones in flight on its kept-alive sockets are retried once elsewhere (the cluster's
 * reused-connection rule), connect failures are retried on another endpoint, and outlier
 * detection ejects it.
 */
import { request } from 'undici';
import { describe, expect, test } from 'vitest';
import { BalancedAgent, StaticEndpointSource } from '../../src/index.js';
import { type Pod, podsAndAgent, startPod, startPods, waitFor } from '../support/loopback-pods.js';

const ORIGIN = 'http://cart.shop.svc';
const ROUTE = 'cart.shop.svc:80';

describe('endpoint lifecycle', () => {
  const fx = podsAndAgent<BalancedAgent>();

  const get = async (path = '/') => {
    const res = await request(`${ORIGIN}${path}`, { dispatcher: fx.agent });
    return { status: res.statusCode, body: (await res.body.text()).trim() };
  };

  test('removing an endpoint closes its idle sockets within 500 ms; its in-flight requests complete', async () => {
    const slow = (req: { url?: string }) => (req.url === '/slow' ? 600 : 0);
    fx.pods = await startPods(2, { delayMs: slow, keepAliveTimeoutMs: 30_000 });
    const [x, y] = fx.pods as [Pod, Pod];
    const source = new StaticEndpointSource([x.endpoint, y.endpoint]);
    fx.agent = new BalancedAgent({ routes: { [ROUTE]: source }, policy: 'round-robin' });
    // Open idle connections to both pods (3 each), then put 2 slow requests on each.
    await Promise.all(Array.from({ length: 6 }, () => get()));
    expect(x.openSockets).toBe(3);
    const slowCalls = Array.from({ length: 4 }, () => get('/slow'));
    await x.waitForInFlight(2);
    const idleSocketIds = [...x.requestsPerSocket.keys()].filter(
      (id) => !x.log.some((r) => r.socketId === id && r.url === '/slow'),
    );
    expect(idleSocketIds.length).toBe(1);
    const removedAt = performance.now();
    source.update([y.endpoint]);
    await waitFor(
      () => idleSocketIds.every((id) => x.closedAt.has(id)),
      'idle sockets of the removed pod to close',
      2_000,
    );
    for (const id of idleSocketIds)
      expect((x.closedAt.get(id) ?? Number.POSITIVE_INFINITY) - removedAt).toBeLessThan(500);
    // In-flight requests on the removed pod finish normally.
    const answers = await Promise.all(slowCalls);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(answers.filter((a) => a.body === x.address)).toHaveLength(2);
    // After they finish, the removed pod's remaining sockets close too, and nothing new goes there.
    await waitFor(() => x.openSockets === 0, 'all sockets of the removed pod to close', 2_000);
    const xBefore = x.requests;
    for (let i = 0; i < 10; i++) expect((await get()).body).toBe(y.address);
    expect(x.requests).toBe(xBefore);
    const removed = fx.agent.stats().routes[0]?.endpoints.find((e) => e.key === `${x.address}:${x.port}`);
    expect(removed === undefined || removed.state === 'draining').toBe(true);
  });

  test('not-ready endpoints get nothing; terminating ones only while nothing is ready', async () => {
    fx.pods = await startPods(3);
    const [ready, notReady, terminating] = fx.pods as [Pod, Pod, Pod];
    const source = new StaticEndpointSource([
      ready.endpoint,
      { ...notReady.endpoint, conditions: { ready: false } },
      { ...terminating.endpoint, conditions: { ready: false, serving: true, terminating: true } },
    ]);
    fx.agent = new BalancedAgent({ routes: { [ROUTE]: source } });
    for (let i = 0; i < 20; i++) expect((await get()).body).toBe(ready.address);
    expect(notReady.requests + terminating.requests).toBe(0);
    const states = Object.fromEntries((fx.agent.stats().routes[0]?.endpoints ?? []).map((e) => [e.address, e.state]));
    expect(states).toEqual({
      [ready.address]: 'eligible',
      [notReady.address]: 'not-ready',
      [terminating.address]: 'not-ready',
    });
    // The ready pod starts terminating too: only serving-and-terminating endpoints remain.
    source.update([
      { ...ready.endpoint, conditions: { ready: false, serving: false, terminating: true } },
      { ...notReady.endpoint, conditions: { ready: false } },
      { ...terminating.endpoint, conditions: { ready: false, serving: true, terminating: true } },
    ]);
    for (let i = 0; i < 10; i++) expect((await get()).body).toBe(terminating.address);
    await waitFor(() => ready.openSockets === 0, 'the no-longer-eligible pod to lose its idle socket', 2_000);
  });

  test('no eligible endpoint fails at once with EVENLB_NO_ENDPOINTS naming the route', async () => {
    const source = new StaticEndpointSource([{ address: '127.0.0.9', port: 9, conditions: { ready: false } }]);
    fx.agent = new BalancedAgent({ routes: { [ROUTE]: source } });
    const t = performance.now();
    const err = await get().then(
      () => undefined,
      (e: { code?: string; message: string }) => e,
    );
    expect(err?.code).toBe('EVENLB_NO_ENDPOINTS');
    expect(err?.message).toContain(ROUTE);
    expect(performance.now() - t).toBeLessThan(1_000);
  });

  test('a backend killed mid-run: its in-flight GETs are retried elsewhere (reused-connection), none fails', async () => {
    fx.pods = await startPods(3, { delayMs: 20, keepAliveTimeoutMs: 30_000 });
    const victim = fx.pods[1] as Pod;
    fx.agent = new BalancedAgent({
      routes: { [ROUTE]: new StaticEndpointSource(fx.pods.map((p) => p.endpoint)) },
      outlierDetection: { consecutiveFailures: 3 },
    });
    const victimKey = `${victim.address}:${victim.port}`;
    let ok = 0;
    let failed = 0;
    let inFlightOnVictimAtKill = -1;
    let sent = 0;
    const deadline = performance.now() + 15_000;
    const callers = Array.from({ length: 6 }, async () => {
      while (sent < 600 && performance.now() < deadline) {
        sent++;
        try {
          const r = await get();
          if (r.status === 200) ok++;
        } catch {
          failed++;
        }
      }
    });
    await waitFor(() => sent >= 150, '150 requests sent', 10_000);
    await victim.waitForInFlight(1);
    inFlightOnVictimAtKill = fx.agent.stats().routes[0]?.endpoints.find((e) => e.key === victimKey)?.inFlight ?? -1;
    const killed = victim.kill();
    await Promise.all(callers);
    await killed;
    expect(inFlightOnVictimAtKill).toBeGreaterThanOrEqual(1);
    // Cut before any answer on kept-alive sockets: idempotent, so retried once on a live pod.
    expect(failed).toBe(0);
    expect(ok).toBe(sent);
    const route = fx.agent.stats().routes[0];
    expect(route?.endpoints.find((e) => e.key === victimKey)?.state).toBe('ejected');
    expect(route?.retries).toBeGreaterThanOrEqual(inFlightOnVictimAtKill);
  });

  test('a connect failure is retried once on another endpoint', async () => {
    const alive = await startPod();
    fx.pods = [alive];
    // 127.0.0.1:1 refuses connections.
    const source = new StaticEndpointSource([{ address: '127.0.0.1', port: 1 }, alive.endpoint]);
    fx.agent = new BalancedAgent({ routes: { [ROUTE]: source }, policy: 'round-robin', outlierDetection: false });
    for (let i = 0; i < 6; i++) expect((await get()).body).toBe(alive.address);
    // Every failure on the dead endpoint was retried once, on the live one (round-robin's
    // retry pick moves its cursor too, so the dead endpoint is tried first most of the time).
    const route = fx.agent.stats().routes[0];
    const deadErrors = route?.endpoints.find((e) => e.port === 1)?.errors ?? 0;
    expect(deadErrors).toBeGreaterThanOrEqual(3);
    expect(route?.retries).toBe(deadErrors);
    expect(alive.requests).toBe(6);
  });
});
