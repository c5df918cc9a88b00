/**
 * `createWebhookClient` calls admission webhooks the way kube-apiserver does with round-trip
 * balancing: for a `service` config every call picks a pod, Host is `<svc>.<ns>.svc:<port>`,
 * TLS verifies `<svc>.<ns>.svc` against the `caBundle`, only http/1.1 is offered; a loopback
 * `url` config may use h2. Timeouts and bad answers fail with stable codes. The "service"
 * resolves to loopback pods through the `endpoints` override.
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { createWebhookClient, StaticEndpointSource, type WebhookClient } from '../../src/index.js';
import { type Pod, startPods, stopPods } from '../support/loopback-pods.js';
import { testCertificates } from '../support/test-certificates.js';

const SERVICE = { namespace: 'default', name: 'test-service', path: '/validate' };
const SERVICE_HOST = 'test-service.default.svc';

/** Answers an AdmissionReview the way a webhook does: allowed, with the request's uid. */
function admit(_req: unknown, body: string): string {
  const review = JSON.parse(body) as { request: { uid: string } };
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: { uid: review.request.uid, allowed: true },
  });
}

const review = (uid: string) => ({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: { uid, operation: 'CREATE', object: { kind: 'Pod' } },
});

describe('webhook client', () => {
  let pods: Pod[] = [];
  let client: WebhookClient | undefined;
  afterEach(async () => {
    await client?.close();
    client = undefined;
    await stopPods(pods);
  });

  test('a service webhook: every call picks a pod; Host and TLS name are <svc>.<ns>.svc; http/1.1 only', async () => {
    const pki = testCertificates(SERVICE_HOST);
    pods = await startPods(3, { tls: pki, body: admit, keepAliveTimeoutMs: 30_000 });
    client = createWebhookClient(
      { service: SERVICE, caBundle: Buffer.from(pki.ca).toString('base64') },
      { endpoints: new StaticEndpointSource(pods.map((p) => p.endpoint)), policy: 'round-robin' },
    );
    expect(client.url).toBe(`https://${SERVICE_HOST}:443/validate`);
    for (let i = 0; i < 30; i++) {
      const answer = await client.call<{ response: { uid: string; allowed: boolean } }>(review(`uid-${i}`));
      expect(answer.response).toEqual({ uid: `uid-${i}`, allowed: true });
    }
    expect(pods.map((p) => p.requests)).toEqual([10, 10, 10]);
    for (const r of pods.flatMap((p) => p.log)) {
      expect(r).toMatchObject({
        method: 'POST',
        url: '/validate',
        host: `${SERVICE_HOST}:443`,
        servername: SERVICE_HOST,
        alpn: 'http/1.1',
      });
    }
    expect(client.stats().routes[0]?.window.imbalance.maxOverMean).toBe(1);
  });

  test('gate off: the idle connection to the first pod keeps being reused (the legacy bug)', async () => {
    const pki = testCertificates(SERVICE_HOST);
    pods = await startPods(2, { tls: pki, body: admit, keepAliveTimeoutMs: 30_000 });
    const [a, b] = pods as [Pod, Pod];
    const source = new StaticEndpointSource([a.endpoint]);
    const caBundle = Buffer.from(pki.ca).toString('base64');
    for (const [gate, expected] of [
      ['RoundTripLoadBalancing=true', { a: 1, b: 1 }],
      ['RoundTripLoadBalancing=false', { a: 2, b: 0 }],
    ] as const) {
      source.update([a.endpoint]);
      const aBefore = a.requests;
      const bBefore = b.requests;
      const c = createWebhookClient({ service: SERVICE, caBundle }, { endpoints: source, featureGates: gate });
      try {
        await c.call(review('first'));
        source.update([b.endpoint]);
        await c.call(review('second'));
      } finally {
        await c.close();
      }
      expect({ a: a.requests - aBefore, b: b.requests - bBefore }).toEqual(expected);
    }
  });

  test('a call that takes too long fails with EVENLB_TIMEOUT; bad answers with EVENLB_WEBHOOK_FAILED', async () => {
    const pki = testCertificates(SERVICE_HOST);
    const caBundle = Buffer.from(pki.ca).toString('base64');
    pods = await startPods(1, {
      tls: pki,
      delayMs: (req) => (req.url === '/slow' ? 1_000 : 0),
      body: (req, body) => (req.url === '/wrong-uid' ? admit(req, body).replace('"uid-1"', '"other"') : 'not json'),
    });
    const endpoints = new StaticEndpointSource(pods.map((p) => p.endpoint));
    const call = async (path: string, timeoutMs?: number) => {
      const c = createWebhookClient({ service: { ...SERVICE, path }, caBundle }, { endpoints, timeoutMs: 5_000 });
      try {
        return await c.call(review('uid-1'), timeoutMs === undefined ? {} : { timeoutMs }).then(
          () => 'ok',
          (e: { code?: string }) => e.code,
        );
      } finally {
        await c.close();
      }
    };
    expect(await call('/slow', 100)).toBe('EVENLB_TIMEOUT');
    expect(await call('/wrong-uid')).toBe('EVENLB_WEBHOOK_FAILED');
    expect(await call('/not-json')).toBe('EVENLB_WEBHOOK_FAILED');
  });

  test('a loopback url webhook may use h2', async () => {
    const pki = testCertificates('localhost');
    const server = http2.createSecureServer({ key: pki.key, cert: pki.cert, allowHTTP1: true }, (req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        res.setHeader('x-http-version', req.httpVersion);
        res.end(admit(req, body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const versions: string[] = [];
    server.on('stream', (_s, headers) => versions.push(String(headers[':method'])));
    try {
      const port = (server.address() as AddressInfo).port;
      client = createWebhookClient({
        url: `https://localhost:${port}/validate`,
        caBundle: Buffer.from(pki.ca).toString('base64'),
      });
      const answer = await client.call<{ response: { uid: string } }>(review('h2'));
      expect(answer.response.uid).toBe('h2');
      expect(versions).toEqual(['POST']);
    } finally {
      await client?.close();
      client = undefined;
      server.close();
    }
  });

  test('bad configs are rejected with the field named', () => {
    expect(() => createWebhookClient({})).toThrow(/exactly one of "service" or "url"/);
    expect(() => createWebhookClient({ service: { namespace: 'x', name: 'Bad_Name' } })).toThrow(/service.name/);
    expect(() => createWebhookClient({ url: 'http://plain.example/' })).toThrow(/https:\/\/ URL/);
    expect(() => createWebhookClient({ url: 'https://a.example/', caBundle: 'bm90IGEgY2VydA==' })).toThrow(/caBundle/);
  });
});
