/**
 * Kubernetes' TestWebhookClientIdleConnectionIPReuse, ported: the Service resolves to pod A,
 * one request is made, then the Service resolves to pod B and a second request is made. With
 * round-trip balancing (the default) the second request must reach B even though an idle
 * connection to A is open; with the gate off the idle connection to A is reused (the bug
 * Kubernetes fixed), so A answers both.
 */
import { request } from 'undici';
import { describe, expect, test } from 'vitest';
import { BalancedAgent, StaticEndpointSource } from '../../src/index.js';
import { type Pod, podsAndAgent, startPods } from '../support/loopback-pods.js';
import { testCertificates } from '../support/test-certificates.js';

const SERVICE = 'test-service.default.svc';

describe('idle connection IP reuse (TestWebhookClientIdleConnectionIPReuse)', () => {
  const fx = podsAndAgent<BalancedAgent>();

  const cases = [
    { gate: 'RoundTripLoadBalancing=true', a: 1, b: 1, second: 'B' },
    { gate: 'RoundTripLoadBalancing=false', a: 2, b: 0, second: 'A' },
  ] as const;

  test.each(cases)('$gate → A=$a, B=$b, second answer from $second', async ({ gate, a, b, second }) => {
    const pki = testCertificates(SERVICE);
    fx.pods = await startPods(2, { tls: pki, keepAliveTimeoutMs: 30_000 });
    const [podA, podB] = fx.pods as [Pod, Pod];
    const source = new StaticEndpointSource([podA.endpoint], 'static:///A');
    fx.agent = new BalancedAgent({
      routes: { [`${SERVICE}:443`]: source },
      tls: { ca: pki.ca },
      featureGates: gate,
    });
    // Both pods listen on their own port; the route names port 443 as clients address the Service.
    const call = async () => {
      const res = await request(`https://${SERVICE}/validate`, { method: 'POST', body: '{}', dispatcher: fx.agent });
      return (await res.body.text()).trim();
    };
    expect(await call()).toBe(podA.address);
    source.update([podB.endpoint]);
    const answer = await call();
    expect(answer).toBe(second === 'A' ? podA.address : podB.address);
    expect(podA.requests).toBe(a);
    expect(podB.requests).toBe(b);
    // Stats tell the story: with the gate off, A is no longer in the Service yet still takes traffic.
    if (a === 2) {
      const statsA = fx.agent.stats().routes[0]?.endpoints.find((e) => e.address === podA.address);
      expect(statsA).toMatchObject({ state: 'draining', windowRequests: 2, openConnections: 1 });
    }
    for (const entry of [...podA.log, ...podB.log]) {
      expect(entry.host).toBe(SERVICE);
      expect(entry.servername).toBe(SERVICE);
    }
  });
});
