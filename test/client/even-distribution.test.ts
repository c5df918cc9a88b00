/**
 * The headline property: 8 concurrent callers sending 4,000 requests to a Service of 4 pods.
 * With round-trip balancing each pod gets 25% ± 3%; with the gate off (one pool keyed by the
 * Service name, the endpoint chosen only when a connection is dialled) the load follows the
 * few connections and is skewed. Both runs use the same seeded random draws.
 */
import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import { BalancedAgent, imbalance, SeededRandom, StaticEndpointSource } from '../../src/index.js';
import { type Pod, startPods, stopPods } from '../support/loopback-pods.js';

const CALLERS = 8;
const REQUESTS = 4_000;

async function runLoad(
  gate: string,
  seed: number,
  pods: readonly Pod[],
): Promise<{ shares: number[]; maxOverMean: number; agentMaxOverMean: number }> {
  const agent = new BalancedAgent({
    routes: { 'orders.shop.svc:80': new StaticEndpointSource(pods.map((p) => p.endpoint)) },
    featureGates: gate,
    random: new SeededRandom(seed),
  });
  const before = pods.map((p) => p.requests);
  let sent = 0;
  const deadline = performance.now() + 20_000;
  try {
    await Promise.all(
      Array.from({ length: CALLERS }, async () => {
        while (sent < REQUESTS && performance.now() < deadline) {
          sent++;
          const res = await request('http://orders.shop.svc/', { dispatcher: agent });
          await res.body.text();
          expect(res.statusCode).toBe(200);
        }
      }),
    );
    const counts = pods.map((p, i) => p.requests - (before[i] ?? 0));
    const total = counts.reduce((a, b) => a + b, 0);
    expect(total).toBe(REQUESTS);
    const route = agent.stats().routes[0];
    return {
      shares: counts.map((c) => c / total),
      maxOverMean: imbalance(counts).maxOverMean,
      agentMaxOverMean: route?.window.imbalance.maxOverMean ?? Number.NaN,
    };
  } finally {
    await agent.close();
  }
}

describe('even distribution across pods', () => {
  let pods: Pod[] = [];
  afterEach(() => stopPods(pods));

  test('gate on: each of 4 pods gets 25% ± 3%; gate off is skewed', async () => {
    pods = await startPods(4, { keepAliveTimeoutMs: 30_000 });
    const on = await runLoad('RoundTripLoadBalancing=true', 7, pods);
    const off = await runLoad('RoundTripLoadBalancing=false', 7, pods);
    console.log(
      `gate on: shares ${on.shares.map((s) => (s * 100).toFixed(1)).join('/')}% max/mean ${on.maxOverMean.toFixed(3)}; ` +
        `gate off: shares ${off.shares.map((s) => (s * 100).toFixed(1)).join('/')}% max/mean ${off.maxOverMean.toFixed(3)}`,
    );
    for (const share of on.shares) expect(Math.abs(share - 0.25)).toBeLessThanOrEqual(0.03);
    // The agent's own windowed figure agrees with what the pods saw.
    expect(on.agentMaxOverMean).toBeCloseTo(on.maxOverMean, 2);
    expect(off.maxOverMean).toBeGreaterThan(on.maxOverMean);
  });
});
