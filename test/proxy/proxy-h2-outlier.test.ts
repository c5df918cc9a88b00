/**
 * `protocol: h2` clusters have one outlier detector — the cluster's: stream outcomes from the
 * HTTP/2 session pool feed it, an endpoint that keeps answering 5xx is ejected and gets no
 * further stream, and the ejection shows in the cluster's stats (`timesEjected`, state).
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { nextLoopbackAddress } from '../support/loopback-pods.js';
import { h2StatusOf, startProxy } from './helpers.js';

interface H2Backend {
  readonly key: string;
  hits: number;
  readonly server: http2.Http2Server;
}

async function startH2(status: number): Promise<H2Backend> {
  const address = nextLoopbackAddress();
  const server = http2.createServer();
  const b: H2Backend = { key: '', hits: 0, server };
  server.on('stream', (stream) => {
    b.hits++;
    stream.respond({ ':status': status });
    stream.end(String(status));
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  Object.assign(b, { key: `${address}:${(server.address() as AddressInfo).port}` });
  return b;
}

let good: H2Backend;
let bad: H2Backend;
let proxy: ProxyServer;

beforeAll(async () => {
  good = await startH2(200);
  bad = await startH2(503);
  proxy = await startProxy({
    listeners: [{ name: 'main', address: '127.0.0.1:0' }],
    clusters: [
      {
        name: 'h2',
        protocol: 'h2',
        target: `static:///${good.key},${bad.key}`,
        policy: 'round-robin',
        outlierDetection: { consecutiveFailures: 3, baseEjectionMs: 60_000 },
        // 503 is also pushback: without the penalty the 503 endpoint keeps its turns until ejected.
        pushback: false,
      },
    ],
    routes: [{ hosts: ['grpc.test'], cluster: 'h2' }],
  });
});

afterAll(async () => {
  await proxy.close();
  for (const b of [good, bad]) {
    b.server.close();
  }
});

describe('h2 cluster outlier detection', () => {
  it('ejects an endpoint answering 503 after 3 streams, in the cluster stats, and sends it nothing more', async () => {
    const session = http2.connect(`http://127.0.0.1:${proxy.listenerPort('main') as number}`);
    try {
      for (let i = 0; i < 8; i++) await h2StatusOf(session, '/', 'grpc.test');
      const stats = proxy.clusters.get('h2')?.cluster.stats();
      const badStats = stats?.endpoints.find((e) => e.key === bad.key);
      expect(badStats?.timesEjected).toBe(1);
      expect(badStats?.state).toBe('ejected');
      expect(bad.hits).toBe(3);
      const before = good.hits;
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) statuses.push(await h2StatusOf(session, '/', 'grpc.test'));
      expect(statuses).toEqual(statuses.map(() => 200));
      expect(good.hits - before).toBe(10);
      expect(bad.hits).toBe(3);
    } finally {
      session.close();
    }
  });
});
