/**
 * TLS follows the Service name, never the endpoint IP: the pods hold a certificate for
 * `test-service.default.svc` only (no IP SAN). Requests routed to their IPs succeed, the
 * server sees the Service name as SNI and Host, only http/1.1 is offered unless `allowH2`,
 * and a client trusting another CA fails with a TLS error — in both gate modes.
 */
import { request } from 'undici';
import { describe, expect, test } from 'vitest';
import { BalancedAgent, StaticEndpointSource } from '../../src/index.js';
import { podsAndAgent, startPods } from '../support/loopback-pods.js';
import { testCertificates } from '../support/test-certificates.js';

const SERVICE = 'test-service.default.svc';

describe('TLS against the Service name', () => {
  const fx = podsAndAgent<BalancedAgent>();

  test.each(['RoundTripLoadBalancing=true', 'RoundTripLoadBalancing=false'])(
    '%s: SNI and Host are the Service name on every pod',
    async (gate) => {
      const pki = testCertificates(SERVICE);
      fx.pods = await startPods(3, { tls: pki });
      fx.agent = new BalancedAgent({
        routes: { [`${SERVICE}:8443`]: new StaticEndpointSource(fx.pods.map((p) => p.endpoint)) },
        tls: { ca: pki.ca },
        featureGates: gate,
        policy: 'round-robin',
      });
      for (let i = 0; i < 12; i++) {
        const res = await request(`https://${SERVICE}:8443/x`, { dispatcher: fx.agent });
        expect(res.statusCode).toBe(200);
        await res.body.text();
      }
      const log = fx.pods.flatMap((p) => p.log);
      expect(log).toHaveLength(12);
      for (const entry of log) {
        expect(entry.servername).toBe(SERVICE);
        expect(entry.host).toBe(`${SERVICE}:8443`);
        expect(entry.alpn).toBe('http/1.1');
      }
      if (gate.endsWith('true')) for (const p of fx.pods) expect(p.requests).toBe(4);
    },
  );

  test.each(['RoundTripLoadBalancing=true', 'RoundTripLoadBalancing=false'])(
    '%s: a wrong CA fails with a TLS error, and the agent still closes',
    async (gate) => {
      const pki = testCertificates(SERVICE);
      const other = testCertificates(SERVICE, 'other-ca');
      fx.pods = await startPods(2, { tls: pki });
      fx.agent = new BalancedAgent({
        routes: { [`${SERVICE}:443`]: new StaticEndpointSource(fx.pods.map((p) => p.endpoint)) },
        tls: { ca: other.ca },
        featureGates: gate,
      });
      const err = await request(`https://${SERVICE}/x`, { dispatcher: fx.agent }).then(
        () => undefined,
        (e: NodeJS.ErrnoException) => e,
      );
      expect(err?.code).toMatch(/CERT|SELF_SIGNED|UNABLE_TO_VERIFY/);
      expect(fx.pods.reduce((n, p) => n + p.requests, 0)).toBe(0);
    },
  );
});
