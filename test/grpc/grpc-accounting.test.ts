/**
 * A gRPC call is one attempt of its channel's cluster, counted once: with real grpc-js servers,
 * N calls are N requests in the channel's stats (per endpoint, in the window, in total) and N
 * in `evenlb_client_requests_total` and the latency histogram; a failure by the shared gRPC
 * rule (INTERNAL by default) counts once as an error and once as `http-error`, an application
 * error (NOT_FOUND) as a success; a channel's own `failureCodes` replace the rule's defaults.
 * And no pick goes around the balancer: when outlier detection ejects every endpoint
 * (`maxEjectionPercent: 100`), calls fail UNAVAILABLE naming it, as BalancedAgent requests do.
 */
import * as grpc from '@grpc/grpc-js';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.js';
import { evenlbServiceConfig, type GrpcRegistration, registerGrpc } from '../../src/grpc/index.js';
import { call, EchoClient, type EchoServer, startEchoServers, waitUntil } from './echo-servers.js';

let servers: EchoServer[];
let evenlb: GrpcRegistration;
const registry = new Registry();
const clients: EchoClient[] = [];

beforeAll(async () => {
  servers = await startEchoServers(5);
  evenlb = registerGrpc(grpc, { name: 'accounting-test', random: new SeededRandom(21), metrics: { registry } });
});
afterAll(async () => {
  for (const c of clients) c.close();
  await evenlb.close();
  await Promise.all(servers.map((s) => s.close()));
});

function client(servers: readonly EchoServer[], config: Parameters<typeof evenlbServiceConfig>[0]): EchoClient {
  const c = new EchoClient(`static:///${servers.map((s) => s.key).join(',')}`, grpc.credentials.createInsecure(), {
    'grpc.service_config': evenlbServiceConfig(config),
  });
  clients.push(c);
  return c;
}

/** Sum of a metric's samples for one route (and outcome, when given). */
async function metricSum(name: string, route: string, outcome?: string): Promise<number> {
  const text = await registry.metrics();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes(`route="${route}"`))
    .filter((l) => outcome === undefined || l.includes(`outcome="${outcome}"`))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}

describe("a call's outcome is counted once, in the cluster's stats and metrics", () => {
  const N = 60;

  it(`${N} calls → ${N} requests; INTERNAL answers are errors once, NOT_FOUND answers successes`, async () => {
    const [ok, internal, notFound] = servers as [EchoServer, EchoServer, EchoServer];
    const c = client([ok, internal, notFound], { policy: 'round-robin', name: 'once', outlierDetection: false });
    // Every subchannel connected first, so round-robin gives each server a third.
    await call(c);
    const route = () => evenlb.stats().routes.find((r) => r.name === 'once');
    await waitUntil(
      () => route()?.endpoints.every((e) => e.connectivity === 'ready') === true,
      5000,
      'three subchannels',
    );
    const before = {
      requests: route()?.requests ?? 0,
      metric: await metricSum('evenlb_client_requests_total', 'once'),
    };
    internal.failWith = grpc.status.INTERNAL;
    notFound.failWith = grpc.status.NOT_FOUND;
    const codes: number[] = [];
    try {
      for (let i = 0; i < N; i++) {
        const r = await call(c);
        codes.push(r.ok ? 0 : r.error.code);
      }
    } finally {
      internal.failWith = undefined;
      notFound.failWith = undefined;
    }
    const failed = codes.filter((code) => code === grpc.status.INTERNAL).length;
    expect(codes.filter((code) => code === grpc.status.NOT_FOUND)).toHaveLength(N / 3);
    expect(failed).toBe(N / 3);
    const stats = route();
    expect((stats?.requests ?? 0) - before.requests).toBe(N);
    expect(stats?.inFlight).toBe(0);
    // Errors count only the failures of the rule, once each; every call is one request of one endpoint.
    expect(stats?.errors).toBe(failed);
    expect(stats?.endpoints.find((e) => e.key === internal.key)?.errors).toBe(failed);
    expect(stats?.endpoints.find((e) => e.key === notFound.key)?.errors).toBe(0);
    expect(stats?.endpoints.reduce((sum, e) => sum + e.requests, 0)).toBe(N + before.requests);
    expect(stats?.endpoints.reduce((sum, e) => sum + e.windowRequests, 0)).toBe(N + before.requests);
    expect(stats?.retries).toBe(0);
    // The same calls in the metrics, each once.
    expect((await metricSum('evenlb_client_requests_total', 'once')) - before.metric).toBe(N);
    expect(await metricSum('evenlb_client_requests_total', 'once', 'http-error')).toBe(failed);
    expect(await metricSum('evenlb_client_request_duration_seconds_count', 'once')).toBe(N + before.metric);
  });

  it("a channel's failureCodes replace the default rule", async () => {
    const [ok, internal] = servers as [EchoServer, EchoServer];
    const c = client([ok, internal], {
      policy: 'round-robin',
      name: 'codes',
      outlierDetection: false,
      failureCodes: [14],
    });
    internal.failWith = grpc.status.INTERNAL;
    try {
      for (let i = 0; i < 20; i++) await call(c);
    } finally {
      internal.failWith = undefined;
    }
    const stats = evenlb.stats().routes.find((r) => r.name === 'codes');
    expect(stats?.requests).toBe(20);
    expect(stats?.errors).toBe(0);
    expect(await metricSum('evenlb_client_requests_total', 'codes', 'http-error')).toBe(0);
    expect(await metricSum('evenlb_client_requests_total', 'codes', 'success')).toBe(20);
  });
});

describe('no pick goes around the balancer', () => {
  it('every endpoint ejected (maxEjectionPercent 100): calls fail UNAVAILABLE naming outlier detection', async () => {
    const pair = servers.slice(3, 5) as [EchoServer, EchoServer];
    const c = client(pair, {
      policy: 'round-robin',
      name: 'all-ejected',
      outlierDetection: { consecutiveFailures: 2, maxEjectionPercent: 100, baseEjectionMs: 60_000 },
    });
    const route = () => evenlb.stats().routes.find((r) => r.name === 'all-ejected');
    for (const s of pair) s.failWith = grpc.status.INTERNAL;
    try {
      for (let i = 0; i < 20 && route()?.endpoints.filter((e) => e.state === 'ejected').length !== 2; i++) {
        await call(c);
      }
    } finally {
      for (const s of pair) s.failWith = undefined;
    }
    expect(route()?.endpoints.map((e) => e.state)).toEqual(['ejected', 'ejected']);
    const served = pair.map((s) => s.served);
    const r = await call(c);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe(grpc.status.UNAVAILABLE);
    expect(r.error.details).toMatch(/every endpoint is ejected by outlier detection/);
    expect(pair.map((s) => s.served)).toEqual(served);
  });
});
