/**
 * Slow start with real sockets: a `BalancedAgent` with `slowStartMs` sends a pod that has
 * just become ready a share that ramps over the window instead of its full share at once, and
 * its stats show the ramp (`slowStartWeight`); with zone routing, requests stay in the caller's
 * zone and stats show each zone's share. Shares are judged per 1 s bucket of responses,
 * as fractions of the fair share, with wide tolerances (the machine is shared).
 */
import { request } from 'undici';
import { describe, expect, test } from 'vitest';
import { BalancedAgent, StaticEndpointSource } from '../../src/index.js';
import { type Pod, podsAndAgent, startPods } from '../support/loopback-pods.js';

const ORIGIN = 'http://cart.shop.svc';
const ROUTE = 'cart.shop.svc:80';
const WINDOW_MS = 4000;

describe('slow start (real sockets)', () => {
  const fx = podsAndAgent<BalancedAgent>();

  test('a newly ready pod gets a ramping share over slowStartMs, in 1 s buckets', async () => {
    fx.pods = await startPods(3);
    const [a, b, fresh] = fx.pods as [Pod, Pod, Pod];
    const source = new StaticEndpointSource([
      a.endpoint,
      b.endpoint,
      { ...fresh.endpoint, conditions: { ready: false } },
    ]);
    fx.agent = new BalancedAgent({ routes: { [ROUTE]: source }, slowStartMs: WINDOW_MS });
    const agent = fx.agent;
    const get = async () => (await (await request(`${ORIGIN}/`, { dispatcher: agent })).body.text()).trim();
    for (let i = 0; i < 20; i++) await get(); // warm connections to the two ready pods
    expect(fresh.requests).toBe(0);

    const readyAt = performance.now();
    source.update([a.endpoint, b.endpoint, fresh.endpoint]);
    const buckets: { fresh: number; all: number }[] = [];
    // Past the window by three seconds, so the bucket checked last (5–6 s) is always complete.
    const stopAt = readyAt + WINDOW_MS + 3000;
    let sent = 0;
    let midRampWeight = 0;
    const worker = async () => {
      while (performance.now() < stopAt && sent < 400_000) {
        sent++;
        const body = await get();
        const s = Math.floor((performance.now() - readyAt) / 1000);
        const bucket = buckets[s] ?? { fresh: 0, all: 0 };
        buckets[s] = bucket;
        bucket.all++;
        if (body === fresh.address) bucket.fresh++;
        if (s === 2 && midRampWeight === 0) {
          const e = agent.stats().routes[0]?.endpoints.find((x) => x.address === fresh.address);
          midRampWeight = e?.slowStartWeight ?? 0;
        }
      }
    };
    await Promise.all(Array.from({ length: 4 }, worker));
    const ofFair = buckets.map((x) => (x === undefined || x.all === 0 ? Number.NaN : x.fresh / x.all / (1 / 3)));
    // Envoy's curve over 4 s (linear, floor 10%): factor 0.1–0.25 in the first second, 1 from 4 s.
    expect(ofFair[0]).toBeLessThanOrEqual(0.5);
    expect(ofFair[2] as number).toBeGreaterThan(ofFair[0] as number);
    expect(ofFair[5] as number).toBeGreaterThanOrEqual(0.75);
    expect(midRampWeight).toBeGreaterThan(0.4);
    expect(midRampWeight).toBeLessThan(0.9);
    const done = agent.stats().routes[0]?.endpoints.find((x) => x.address === fresh.address);
    expect(done?.slowStartWeight).toBe(1);
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
