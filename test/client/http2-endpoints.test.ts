/**
 * HTTP/2 endpoints: with `allowH2` an HTTPS endpoint that negotiates h2 by ALPN carries many
 * concurrent requests on one connection; with `h2c` a cleartext endpoint is spoken to with
 * prior knowledge (gRPC-style backends). Requests are still balanced per request and
 * `maxRequestsPerConnection` still counts streams exactly.
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import { BalancedAgent, StaticEndpointSource } from '../../src/index.js';
import { nextLoopbackAddress } from '../support/loopback-pods.js';
import { testCertificates } from '../support/test-certificates.js';

interface H2Pod {
  readonly address: string;
  readonly port: number;
  readonly sessions: number;
  readonly streamsPerSession: number[];
  close(): Promise<void>;
}

async function startH2Pod(tls?: { key: string; cert: string }): Promise<H2Pod> {
  const address = nextLoopbackAddress();
  const server = tls ? http2.createSecureServer({ key: tls.key, cert: tls.cert }) : http2.createServer();
  const streamsPerSession: number[] = [];
  server.on('session', (session) => {
    const i = streamsPerSession.push(0) - 1;
    session.on('stream', () => {
      streamsPerSession[i] = (streamsPerSession[i] ?? 0) + 1;
    });
  });
  server.on('stream', (stream) => {
    setTimeout(() => {
      if (stream.destroyed) return;
      stream.respond({ ':status': 200 });
      stream.end(address);
    }, 20);
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  return {
    address,
    port: (server.address() as AddressInfo).port,
    get sessions() {
      return streamsPerSession.length;
    },
    streamsPerSession,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of (server as unknown as { _sessions?: Set<http2.Http2Session> })._sessions ?? []) s.destroy();
      }),
  };
}

describe('HTTP/2 endpoints', () => {
  let pods: H2Pod[] = [];
  let agent: BalancedAgent | undefined;
  afterEach(async () => {
    await agent?.destroy();
    agent = undefined;
    await Promise.all(pods.map((p) => p.close()));
    pods = [];
  });

  test('allowH2: concurrent requests share one h2 connection per endpoint', async () => {
    const pki = testCertificates('grpc.prod.svc');
    pods = [await startH2Pod(pki), await startH2Pod(pki)];
    agent = new BalancedAgent({
      routes: {
        'grpc.prod.svc:443': new StaticEndpointSource(pods.map((p) => ({ address: p.address, port: p.port }))),
      },
      tls: { ca: pki.ca },
      allowH2: true,
    });
    const call = async () =>
      (await (await request('https://grpc.prod.svc/', { dispatcher: agent })).body.text()).trim();
    // Warm one connection per pod, then fire a concurrent batch.
    await Promise.all([call(), call()]);
    const answers = await Promise.all(Array.from({ length: 40 }, call));
    const perPod = pods.map((p) => answers.filter((a) => a === p.address).length);
    expect(perPod.reduce((a, b) => a + b, 0)).toBe(40);
    for (const n of perPod) expect(n).toBeGreaterThanOrEqual(14);
    // Multiplexed: far fewer sessions than concurrent requests.
    for (const p of pods) expect(p.sessions).toBeLessThanOrEqual(3);
  });

  test('h2c with maxRequestsPerConnection counts streams exactly', async () => {
    pods = [await startH2Pod()];
    const pod = pods[0] as H2Pod;
    agent = new BalancedAgent({
      routes: { 'grpc.prod.svc:80': new StaticEndpointSource([{ address: pod.address, port: pod.port }]) },
      h2c: true,
      maxRequestsPerConnection: 5,
    });
    for (let i = 0; i < 20; i++) {
      const res = await request('http://grpc.prod.svc/', { dispatcher: agent });
      expect(res.statusCode).toBe(200);
      await res.body.text();
    }
    expect(pod.streamsPerSession).toEqual([5, 5, 5, 5]);
  });
});
