/**
 * What responses say of their endpoint's load, read by both HTTP transports (BalancedAgent over
 * undici pools, `createHttpAgent` over `node:http`), on real sockets:
 *
 * - pushback: a pod answering 429 to every other request gets a share well below the others'
 *   while it does, and a fair share again once one penalty window has passed after it stopped;
 * - load reports: with a policy that reads them (`report-weighted`) every response of a
 *   `reportLoad` server is recorded, a malformed one ignored; a policy that does not read them
 *   (`least-request`) records none;
 * - load probes: `prequal` probes the pods' load document within its budget; pods that serve
 *   none make the probes fail, never a request.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import {
  BalancedAgent,
  type BalancedHttpAgent,
  type ClusterStats,
  createHttpAgent,
  SeededRandom,
  StaticEndpointSource,
} from '../../src/index.js';
import { type LoadReporting, reportLoad } from '../../src/server/index.js';
import { nextLoopbackAddress } from '../support/loopback-pods.js';

const HOST = 'orders.shop.svc';
const ROUTE = `${HOST}:80`;
const WINDOW_MS = 1_000;

interface TestPod {
  readonly server: http.Server;
  readonly endpoint: { address: string; port: number };
  /** Requests that reached the pod (429s included). */
  requests: number;
  /** Answer 429 to every other request while true. */
  pushing: boolean;
  /** Extra response headers. */
  headers: Record<string, string>;
  reporting?: LoadReporting;
}

let pods: TestPod[] = [];
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
  await Promise.all(
    pods.map(async (p) => {
      await p.reporting?.close();
      p.server.closeAllConnections();
      await new Promise<void>((resolve) => p.server.close(() => resolve()));
    }),
  );
  pods = [];
});

async function startPods(n: number, report = false): Promise<TestPod[]> {
  for (let i = 0; i < n; i++) {
    const pod: TestPod = {
      server: http.createServer((req, res) => {
        req.resume();
        pod.requests++;
        const pushback = pod.pushing && pod.requests % 2 === 0;
        res.writeHead(pushback ? 429 : 200, { 'content-type': 'text/plain', ...pod.headers });
        res.end(String(i));
      }),
      endpoint: { address: nextLoopbackAddress(), port: 0 },
      requests: 0,
      pushing: false,
      headers: {},
    };
    pod.server.keepAliveTimeout = 30_000;
    if (report) pod.reporting = reportLoad(pod.server, { periodMs: 100 });
    await new Promise<void>((resolve) => pod.server.listen(0, pod.endpoint.address, resolve));
    pod.endpoint.port = (pod.server.address() as AddressInfo).port;
    pods.push(pod);
  }
  return pods;
}

function nodeGet(agent: http.Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(`http://${HOST}/`, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A transport under test: sends one GET, reads its route's stats, closes. */
interface Transport {
  get(): Promise<number>;
  stats(): ClusterStats;
  close(): Promise<void>;
}

type Settings = NonNullable<ConstructorParameters<typeof BalancedAgent>[0]>;

const transports: Record<string, (settings: Settings) => Transport> = {
  BalancedAgent: (settings) => {
    const agent = new BalancedAgent(settings);
    return {
      get: async () => {
        const res = await request(`http://${HOST}/`, { dispatcher: agent });
        await res.body.dump();
        return res.statusCode;
      },
      stats: () => agent.stats().routes[0] as ClusterStats,
      close: () => agent.close(),
    };
  },
  createHttpAgent: (settings) => {
    const agent: BalancedHttpAgent = createHttpAgent(settings);
    return {
      get: () => nodeGet(agent),
      stats: () => agent.stats().routes[0] as ClusterStats,
      close: () => agent.close(),
    };
  },
};

function make(kind: string, settings: Omit<Settings, 'routes'>): Transport {
  const t = (transports[kind] as (s: Settings) => Transport)({
    routes: { [ROUTE]: new StaticEndpointSource(pods.map((p) => p.endpoint)) },
    ...settings,
  });
  closers.push(() => t.close());
  return t;
}

/** Sends `count` GETs, `concurrency` at a time; returns the statuses seen. */
async function load(t: Transport, count: number, concurrency = 4): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  let sent = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < count) {
        sent++;
        const status = await t.get();
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    }),
  );
  return statuses;
}

/** Requests each pod received during `run`. */
async function counted(run: () => Promise<unknown>): Promise<number[]> {
  const before = pods.map((p) => p.requests);
  await run();
  return pods.map((p, i) => p.requests - (before[i] as number));
}

/** Pod 0's count over the mean of the others'. */
const shareOfFirst = (counts: readonly number[]) =>
  (counts[0] as number) / (counts.slice(1).reduce((a, b) => a + b, 0) / (counts.length - 1));

describe.each(Object.keys(transports))('%s', (kind) => {
  test('pushback: a pod answering 429 to half its requests gets well below a fair share, and a fair one a window after it stops', async () => {
    await startPods(4);
    const t = make(kind, { random: new SeededRandom(7), pushback: { windowMs: WINDOW_MS } });
    await load(t, 40);
    const first = pods[0] as TestPod;
    first.pushing = true;
    const pushing = await counted(() => load(t, 800));
    first.pushing = false;
    const pushbacks = t.stats().endpoints.map((e) => e.pushbacks);
    // One window after its last pushback the penalty is gone.
    await new Promise((r) => setTimeout(r, WINDOW_MS + 200));
    const after = await counted(() => load(t, 800));
    process.stdout.write(
      `${kind}: pushing ${pushing.join('/')} (share ${shareOfFirst(pushing).toFixed(2)} of the others'), after ${after.join('/')} (${shareOfFirst(after).toFixed(2)})\n`,
    );
    expect(shareOfFirst(pushing)).toBeLessThan(0.5);
    expect(shareOfFirst(after)).toBeGreaterThan(0.8);
    expect(shareOfFirst(after)).toBeLessThan(1.2);
    const firstKey = `${first.endpoint.address}:${first.endpoint.port}`;
    const endpoints = t.stats().endpoints;
    expect(pushbacks[endpoints.findIndex((e) => e.key === firstKey)]).toBeGreaterThan(0);
    expect(pushbacks.reduce((a, b) => a + b, 0)).toBe(
      pushbacks[endpoints.findIndex((e) => e.key === firstKey)] as number,
    );
  }, 30_000);

  test('pushback: false keeps the pod at a fair share', async () => {
    await startPods(4);
    const t = make(kind, { random: new SeededRandom(7), pushback: false });
    (pods[0] as TestPod).pushing = true;
    const pushing = await counted(() => load(t, 800));
    expect(shareOfFirst(pushing)).toBeGreaterThan(0.8);
  }, 30_000);

  test('load reports: recorded for a policy that reads them, malformed ones ignored, none for least-request', async () => {
    await startPods(2, true);
    const reading = make(kind, { policy: 'report-weighted' });
    const statuses = await load(reading, 100);
    expect(statuses.get(200)).toBe(100);
    expect(reading.stats().loadReports).toEqual({ recorded: 100, ignored: 0 });
    expect(reading.stats().endpoints.reduce((n, e) => n + e.loadReports, 0)).toBe(100);

    // A header that is not a load report is ignored, never an error.
    for (const p of pods) {
      await p.reporting?.close();
      p.headers = { 'endpoint-load-metrics': 'TEXT cpu_utilization=oops' };
    }
    await load(reading, 20);
    expect(reading.stats().loadReports).toEqual({ recorded: 100, ignored: 20 });

    const blind = make(kind, { policy: 'least-request' });
    await load(blind, 20);
    expect(blind.stats().loadReports).toEqual({ recorded: 0, ignored: 0 });
  }, 30_000);

  test('load probes: prequal asks the load document within its budget; without one, probes fail and requests do not', async () => {
    await startPods(4, true);
    const probing = make(kind, { policy: 'prequal', policyOptions: { probesPerRequest: 0.1 } });
    expect((await load(probing, 400)).get(200)).toBe(400);
    await waitUntil(() => probing.stats().loadProbes.inFlight === 0);
    const probes = probing.stats().loadProbes;
    expect(probes.sent).toBeGreaterThan(0);
    expect(probes.sent).toBeLessThanOrEqual(0.1 * 400 + 1);
    expect(probes.answered).toBe(probes.sent);

    const nowhere = make(kind, {
      policy: 'prequal',
      policyOptions: { probesPerRequest: 0.1 },
      loadProbes: { path: '/missing' },
    });
    expect((await load(nowhere, 200)).get(200)).toBe(200);
    await waitUntil(() => nowhere.stats().loadProbes.inFlight === 0);
    const failed = nowhere.stats().loadProbes;
    expect(failed.sent).toBeGreaterThan(0);
    expect(failed.answered).toBe(0);
    expect(failed.failed).toBe(failed.sent);

    const off = make(kind, { policy: 'prequal', loadProbes: false });
    await load(off, 100);
    expect(off.stats().loadProbes.sent).toBe(0);
  }, 30_000);
});

async function waitUntil(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
