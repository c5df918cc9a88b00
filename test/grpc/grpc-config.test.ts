/**
 * `evenlb/grpc` configuration and the policy's per-call features, with real grpc-js servers:
 * config errors name the field (eagerly in `evenlbServiceConfig`, and as the UNAVAILABLE status of
 * every call when a bad config reaches a channel, rather than grpc-js's silent fallback to
 * pick_first); bad targets and bad `registerGrpc` arguments fail clearly; `ring-hash` keeps one
 * metadata key on one server; failing calls eject a server (outlier detection); `peak-ewma` learns
 * call latency from the same load records; the prom-client
 * registry exports `evenlb_client_*` for gRPC channels.
 */
import * as grpc from '@grpc/grpc-js';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.js';
import {
  evenlbServiceConfig,
  type GrpcRegistration,
  parseGrpcBalancingConfig,
  registerGrpc,
} from '../../src/grpc/index.js';
import { call, EchoClient, type EchoServer, startEchoServers } from './echo-servers.js';

let servers: EchoServer[];
let evenlb: GrpcRegistration;
const registry = new Registry();
const clients: EchoClient[] = [];

beforeAll(async () => {
  servers = await startEchoServers(3);
  evenlb = registerGrpc(grpc, { name: 'config-test', random: new SeededRandom(3), metrics: { registry } });
});
afterAll(async () => {
  for (const c of clients) c.close();
  await evenlb.close();
  await Promise.all(servers.map((s) => s.close()));
});

const target = () => `static:///${servers.map((s) => s.key).join(',')}`;

function client(serviceConfig?: string, to = target()): EchoClient {
  const c = new EchoClient(
    to,
    grpc.credentials.createInsecure(),
    serviceConfig === undefined ? {} : { 'grpc.service_config': serviceConfig },
  );
  clients.push(c);
  return c;
}

describe('evenlb load-balancing config', () => {
  const cases: { input: unknown; message: RegExp }[] = [
    { input: { policy: 'fastest' }, message: /option "policy" must be one of .*"least-request".*received "fastest"/ },
    { input: { policy: 'least-request', policyOptions: { choiceCount: 'two' } }, message: /"choiceCount"/ },
    { input: { policy: 'round-robin', retries: 3 }, message: /unknown option "retries"/ },
    { input: { hashHeader: 'X-User' }, message: /option "hashHeader" must be a lower-case metadata key/ },
    { input: { failureCodes: [14, 99] }, message: /option "failureCodes" must be an array of gRPC status codes/ },
    {
      input: { outlierDetection: { consecutiveFailures: 0 } },
      message: /"consecutiveFailures" must be an integer >= 1/,
    },
  ];
  for (const { input, message } of cases) {
    it(`rejects ${JSON.stringify(input)} naming the field`, () => {
      expect(() => parseGrpcBalancingConfig(input)).toThrow(message);
      expect(() => evenlbServiceConfig(input as never)).toThrow(message);
    });
  }

  it('a bad config on a channel fails calls with UNAVAILABLE naming the field, not a silent pick_first', async () => {
    const c = client(JSON.stringify({ loadBalancingConfig: [{ evenlb: { policy: 'fastest' } }] }));
    const r = await call(c);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe(grpc.status.UNAVAILABLE);
    expect(r.error.details).toMatch(/option "policy" must be one of/);
  });

  it('rejects a malformed target and a second open registration', () => {
    expect(() => client(undefined, 'k8s:///echo-without-namespace:grpc')).toThrow(/is not NAME\.NAMESPACE/);
    expect(() => client(undefined, 'static:///not-an-ip:80')).toThrow(/is not an IP address/);
    expect(() => registerGrpc(grpc)).toThrow(/already has an open evenlb registration/);
    expect(() => registerGrpc({} as never)).toThrow(/"grpc" must be the @grpc\/grpc-js module/);
  });
});

describe('evenlb policy features', () => {
  it('ring-hash sends every call with one x-evenlb-hash-key to one server', async () => {
    const c = client(evenlbServiceConfig({ policy: 'ring-hash', name: 'hash' }));
    const byKey = new Map<string, Set<string>>();
    for (let i = 0; i < 120; i++) {
      const key = `user-${i % 12}`;
      const md = new grpc.Metadata();
      md.set('x-evenlb-hash-key', key);
      const r = await call(c, 'hi', md);
      expect(r.ok).toBe(true);
      if (!r.ok) continue;
      const seen = byKey.get(key) ?? new Set<string>();
      seen.add(r.server);
      byKey.set(key, seen);
    }
    // The first calls of a key may land before every subchannel is connected; afterwards one server per key.
    const servedBy = [...byKey.values()];
    expect(servedBy.filter((s) => s.size > 1).length).toBeLessThanOrEqual(3);
    expect(new Set(servedBy.map((s) => [...s].at(-1))).size).toBeGreaterThanOrEqual(2);
  });

  it('ejects a server whose calls keep failing; its calls go to the others', async () => {
    const c = client(
      evenlbServiceConfig({
        policy: 'round-robin',
        name: 'outlier',
        outlierDetection: { consecutiveFailures: 3, baseEjectionMs: 60_000 },
      }),
    );
    const bad = servers[0] as EchoServer;
    bad.failWith = grpc.status.INTERNAL;
    try {
      for (let i = 0; i < 20; i++) await call(c);
      const stats = () => evenlb.stats().routes.find((r) => r.name === 'outlier');
      const failedBefore = stats()?.errors ?? 0;
      let failed = 0;
      for (let i = 0; i < 60; i++) if (!(await call(c)).ok) failed++;
      expect(failed).toBe(0);
      expect(stats()?.errors).toBe(failedBefore);
      const badStats = stats()?.endpoints.find((e) => e.key === bad.key);
      expect(badStats?.state).toBe('ejected');
      expect(badStats?.timesEjected).toBe(1);
      expect(badStats?.errors).toBeGreaterThanOrEqual(3);
    } finally {
      bad.failWith = undefined;
    }
  });

  it("balances over grpc-js's own resolvers too; dns:/// stays grpc-js's without dns: true", async () => {
    const addresses = servers.map((s) => s.key).join(',');
    const c = client(evenlbServiceConfig({ policy: 'round-robin', name: 'ipv4' }), `ipv4:///${addresses}`);
    expect((await call(c)).ok).toBe(true);
    const route = () => evenlb.stats().routes.find((r) => r.name === 'ipv4');
    const start = performance.now();
    while (route()?.endpoints.filter((e) => e.connectivity === 'ready').length !== 3) {
      expect(performance.now() - start).toBeLessThan(5000);
      await new Promise((r) => setTimeout(r, 5));
    }
    const before = servers.map((s) => s.served);
    for (let i = 0; i < 60; i++) expect((await call(c)).ok).toBe(true);
    expect(servers.map((s, i) => s.served - (before[i] ?? 0))).toEqual([20, 20, 20]);
    // No evenlb resolver behind it: the channel is named by its config, discovery is what grpc-js resolved.
    expect(route()?.target).toBe('ipv4');
    const plain = client(evenlbServiceConfig({ name: 'plain-dns' }), `dns:///localhost:${servers[0]?.port}`);
    expect((await call(plain)).ok).toBe(true);
    expect(evenlb.stats().routes.find((r) => r.name === 'plain-dns')?.target).toBe('plain-dns');
  });

  it('peak-ewma learns call latency: a slow server gets a small share', async () => {
    const c = client(evenlbServiceConfig({ policy: 'peak-ewma', name: 'ewma' }));
    const slow = servers[2] as EchoServer;
    for (let i = 0; i < 30; i++) await call(c);
    slow.delayMs = 60;
    const before = servers.map((s) => s.served);
    try {
      let sent = 0;
      const deadline = performance.now() + 20_000;
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (sent < 400 && performance.now() < deadline) {
            sent++;
            expect((await call(c, 'delay:2')).ok).toBe(true);
          }
        }),
      );
      const got = servers.map((s, i) => s.served - (before[i] ?? 0));
      process.stdout.write(`peak-ewma with one server 60 ms slower: ${got.join(' ')}\n`);
      const total = got.reduce((a, b) => a + b, 0);
      // A fair share is a third; latency-blind round-robin would give it exactly that.
      expect((got[2] ?? 0) / total).toBeLessThan(0.2);
      const ewma = evenlb.stats().routes.find((r) => r.name === 'ewma');
      expect(ewma?.endpoints.find((e) => e.key === slow.key)?.latencyMs).toBeGreaterThan(20);
    } finally {
      slow.delayMs = 0;
    }
  });

  it('exports evenlb_client_* metrics for gRPC channels on the prom-client registry', async () => {
    const c = client(evenlbServiceConfig({ policy: 'least-request', name: 'metered' }));
    for (let i = 0; i < 30; i++) expect((await call(c)).ok).toBe(true);
    const text = await registry.metrics();
    const served = text
      .split('\n')
      .filter((l) => l.startsWith('evenlb_client_requests_total{') && l.includes('route="metered"'))
      .filter((l) => l.includes('outcome="success"'))
      .map((l) => Number(l.split(' ').at(-1)));
    expect(served.reduce((a, b) => a + b, 0)).toBe(30);
    expect(text).toMatch(/evenlb_client_imbalance_max_over_mean\{client="config-test",route="metered"\}/);
    expect(text).toMatch(
      /evenlb_client_open_connections\{client="config-test",route="metered",endpoint="127\.0\.0\.1:\d+"\} 1/,
    );
  });
});
