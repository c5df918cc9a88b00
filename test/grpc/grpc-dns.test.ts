/**
 * `dns:///` stays grpc-js's own resolver unless `registerGrpc(grpc, { dns: true })`; opted in,
 * evenlb's re-resolving DNS source follows a scale-out behind a healthy channel (the case grpc-js's
 * resolver misses: it re-resolves only after a connection fails). Real DNS queries go to a tiny
 * DNS server on loopback; the pods are grpc-js servers on 127.0.5.x sharing one port.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.js';
import { type GrpcRegistration, registerGrpc } from '../../src/grpc/index.js';
import { TinyDnsServer } from '../support/tiny-dns-server.js';
import { call, EchoClient, type EchoServer, startEchoServer, waitUntil } from './echo-servers.js';

let dns: TinyDnsServer;
let evenlb: GrpcRegistration;
const pods: EchoServer[] = [];

beforeAll(async () => {
  const first = await startEchoServer('dns-1', '127.0.5.1');
  pods.push(first, await startEchoServer('dns-2', '127.0.5.2', first.port));
  dns = await TinyDnsServer.start({ 'echo.rpc.svc.cluster.local': ['127.0.5.1'] });
  evenlb = registerGrpc(grpc, {
    dns: true,
    random: new SeededRandom(2),
    sourceOptions: { dns: { servers: [dns.server], refreshIntervalMs: 100 } },
  });
});
afterAll(async () => {
  await evenlb.close();
  await dns.close();
  await Promise.all(pods.map((p) => p.close()));
});

it('with dns: true, a channel follows a new A record within 1 s while healthy', async () => {
  const port = pods[0]?.port ?? 0;
  const client = new EchoClient(`dns:///echo.rpc.svc.cluster.local:${port}`, grpc.credentials.createInsecure());
  try {
    for (let i = 0; i < 20; i++) {
      const r = await call(client);
      expect(r.ok && r.server).toBe('dns-1');
    }
    const added = performance.now();
    dns.records = { 'echo.rpc.svc.cluster.local': ['127.0.5.1', '127.0.5.2'] };
    let sawSecond = false;
    while (!sawSecond && performance.now() - added < 3000) {
      const r = await call(client);
      expect(r.ok).toBe(true);
      sawSecond = r.ok && r.server === 'dns-2';
    }
    expect(sawSecond).toBe(true);
    expect(performance.now() - added).toBeLessThanOrEqual(1000);
    await waitUntil(() => evenlb.stats().routes[0]?.endpoints.length === 2, 1000, 'two endpoints in stats');
    expect(evenlb.stats().routes[0]?.target).toBe(`dns:///echo.rpc.svc.cluster.local:${port}`);
  } finally {
    client.close();
  }
});
