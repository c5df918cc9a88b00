/**
 * `evenlb/grpc` spreads calls per call, not per connection: 4 real grpc-js servers on loopback
 * behind one channel with a `static:///` target. round-robin over 400 sequential unary calls
 * gives max/mean ≤ 1.1; least-request with 8 calls in flight gives max/mean ≤ 1.2. The
 * registration's stats agree with the servers' own counts.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.js';
import { evenlbServiceConfig, type GrpcRegistration, registerGrpc } from '../../src/grpc/index.js';
import { call, EchoClient, type EchoServer, maxOverMean, startEchoServers, waitUntil } from './echo-servers.js';

let servers: EchoServer[];
let evenlb: GrpcRegistration;
const clients: EchoClient[] = [];

beforeAll(async () => {
  servers = await startEchoServers(4);
  evenlb = registerGrpc(grpc, { random: new SeededRandom(16) });
});
afterAll(async () => {
  for (const c of clients) c.close();
  await evenlb.close();
  await Promise.all(servers.map((s) => s.close()));
});

const target = () => `static:///${servers.map((s) => s.key).join(',')}`;

/** A channel to the four servers; without `config`, the resolver's default service config applies. */
function client(config?: { policy: string; name: string }): EchoClient {
  const options = config === undefined ? {} : { 'grpc.service_config': evenlbServiceConfig(config) };
  const c = new EchoClient(target(), grpc.credentials.createInsecure(), options);
  clients.push(c);
  return c;
}

/** Sends one call, then waits until every endpoint's subchannel is connected, then zeroes the counts. */
async function warm(c: EchoClient, name: string): Promise<void> {
  expect((await call(c)).ok).toBe(true);
  await waitUntil(
    () =>
      evenlb
        .stats()
        .routes.find((r) => r.name === name)
        ?.endpoints.filter((e) => e.connectivity === 'ready').length === 4,
    5000,
    'four connected subchannels',
  );
  for (const s of servers) s.served = 0;
}

describe('evenlb policy on a grpc-js channel', () => {
  it('round-robin spreads 400 sequential unary calls with max/mean <= 1.1', async () => {
    const c = client({ policy: 'round-robin', name: 'rr' });
    await warm(c, 'rr');
    let failed = 0;
    for (let i = 0; i < 400; i++) if (!(await call(c)).ok) failed++;
    const counts = servers.map((s) => s.served);
    process.stdout.write(`round-robin, 400 calls: ${counts.join(' ')} max/mean ${maxOverMean(counts).toFixed(3)}\n`);
    expect(failed).toBe(0);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(400);
    expect(maxOverMean(counts)).toBeLessThanOrEqual(1.1);
    const stats = evenlb.stats().routes.find((r) => r.name === 'rr');
    expect(stats?.policy).toBe('round-robin');
    expect(stats?.inFlight).toBe(0);
    expect(stats?.endpoints.map((e) => e.state)).toEqual(['eligible', 'eligible', 'eligible', 'eligible']);
    expect(stats?.endpoints.every((e) => e.openConnections === 1)).toBe(true);
  });

  it('least-request keeps 8 concurrent callers spread with max/mean <= 1.2', async () => {
    const c = client();
    // No service config on the channel: the resolver's default (least-request) applies.
    await call(c);
    const route = () => evenlb.stats().routes.find((r) => r.target === target() && r.policy === 'least-request');
    await waitUntil(() => route()?.endpoints.filter((e) => e.connectivity === 'ready').length === 4, 5000, 'ready');
    for (const s of servers) s.served = 0;
    let sent = 0;
    let failed = 0;
    const deadline = performance.now() + 20_000;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (sent < 800 && performance.now() < deadline) {
          sent++;
          if (!(await call(c, 'delay:2')).ok) failed++;
        }
      }),
    );
    const counts = servers.map((s) => s.served);
    process.stdout.write(
      `least-request, 8 concurrent, ${sent} calls: ${counts.join(' ')} max/mean ${maxOverMean(counts).toFixed(3)}\n`,
    );
    expect(failed).toBe(0);
    expect(maxOverMean(counts)).toBeLessThanOrEqual(1.2);
    const stats = route();
    expect(stats?.requests).toBeGreaterThanOrEqual(sent);
    expect(stats?.window.imbalance.maxOverMean).toBeLessThanOrEqual(1.25);
  });
});
