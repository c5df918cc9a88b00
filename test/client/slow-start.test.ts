/**
 * Slow start with real sockets: a `BalancedAgent` with `slowStartMs` sends a pod that has
 * just become ready a share that ramps over the window instead of its full share at once, and
 * its stats show the ramp (`slowStartWeight`); with zone routing, requests stay in the caller's
 * zone and stats show each zone's share. The ramp runs on a `ManualClock`: shares are judged
 * per simulated second (the same number of requests in each), as fractions of the fair share.
 */
import { request } from 'undici';
import { describe, expect, test } from 'vitest';
import { BalancedAgent, ManualClock, StaticEndpointSource } from '../../src/index.js';
import { type Pod, podsAndAgent, startPods } from '../support/loopback-pods.js';

const ORIGIN = 'http://cart.shop.svc';
const ROUTE = 'cart.shop.svc:80';
const WINDOW_MS = 4000;
/** Requests sent in each simulated second (by 4 concurrent callers). */
const PER_SECOND = 400;

function freshStats(agent: BalancedAgent, fresh: Pod) {
  return agent.stats().routes[0]?.endpoints.find((x) => x.address === fresh.address && x.state === 'eligible');
}

async function waitUntil(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('slow start (real sockets)', () => {
  const fx = podsAndAgent<BalancedAgent>();

  test('a newly ready pod gets a ramping share over slowStartMs, per simulated second', async () => {
    fx.pods = await startPods(3);
    const [a, b, fresh] = fx.pods as [Pod, Pod, Pod];
    const source = new StaticEndpointSource([
      a.endpoint,
      b.endpoint,
      { ...fresh.endpoint, conditions: { ready: false } },
    ]);
    // The ramp runs on an injected clock: each simulated second gets the same number of real
    // requests, however slow the machine is, so the shares measure the ramp and nothing else.
    const clock = new ManualClock(1_000_000);
    fx.agent = new BalancedAgent({ routes: { [ROUTE]: source }, slowStartMs: WINDOW_MS, clock });
    const agent = fx.agent;
    const get = async () => (await (await request(`${ORIGIN}/`, { dispatcher: agent })).body.text()).trim();
    for (let i = 0; i < 20; i++) await get(); // warm connections to the two ready pods
    expect(fresh.requests).toBe(0);

    source.update([a.endpoint, b.endpoint, fresh.endpoint]);
    await waitUntil(() => freshStats(agent, fresh) !== undefined);
    const ofFair: number[] = [];
    const weights: number[] = [];
    for (let second = 0; second < 6; second++) {
      // The middle of the simulated second: the weight is the ramp's value at second + 0.5.
      clock.advance(second === 0 ? 500 : 1000);
      weights.push(freshStats(agent, fresh)?.slowStartWeight ?? 0);
      let freshHits = 0;
      const worker = async () => {
        for (let i = 0; i < PER_SECOND / 4; i++) if ((await get()) === fresh.address) freshHits++;
      };
      await Promise.all(Array.from({ length: 4 }, worker));
      ofFair.push(freshHits / PER_SECOND / (1 / 3));
    }
    // Envoy's curve over 4 s (linear, floor 10%): about 0.1–0.25 of the fair share in the
    // first second, rising, and the full share once the window is over.
    expect(ofFair[0]).toBeLessThanOrEqual(0.5);
    expect(ofFair[2] as number).toBeGreaterThan(ofFair[0] as number);
    expect(ofFair[5] as number).toBeGreaterThanOrEqual(0.75);
    expect(weights[0]).toBeLessThan(weights[2] as number);
    expect(weights[2]).toBeGreaterThan(0.4);
    expect(weights[2]).toBeLessThan(0.9);
    expect(weights[5]).toBe(1);
  }, 30_000);

  test('zone routing keeps requests in the caller’s zone; stats show each zone’s share', async () => {
    fx.pods = await startPods(3);
    const [a1, a2, b1] = fx.pods as [Pod, Pod, Pod];
    const source = new StaticEndpointSource([
      { ...a1.endpoint, zone: 'zone-a' },
      { ...a2.endpoint, zone: 'zone-a' },
      { ...b1.endpoint, zone: 'zone-b' },
    ]);
    fx.agent = new BalancedAgent({ routes: { [ROUTE]: source }, zoneRouting: { zone: 'zone-a', mode: 'on' } });
    const agent = fx.agent;
    for (let i = 0; i < 200; i++) await (await request(`${ORIGIN}/`, { dispatcher: agent })).body.text();
    const route = agent.stats().routes[0];
    const shareOf = (zone: string) => route?.zones.find((z) => z.zone === zone)?.share ?? 0;
    expect(shareOf('zone-a')).toBeGreaterThanOrEqual(0.9);
    expect(shareOf('zone-a') + shareOf('zone-b')).toBeCloseTo(1, 5);
    expect(route?.zoneRouting).toMatchObject({ zone: 'zone-a', active: true });
    expect(a1.requests + a2.requests).toBeGreaterThanOrEqual(180);
  }, 30_000);
});
