/**
 * Requests follow a Service's pods. A `k8s:///` source feeds a Balancer, the per-Service
 * request engine `Cluster` (what the BalancedAgent and the proxy route through) and a
 * `BalancedAgent` routing `<svc>.<ns>.svc` names; real HTTP requests go to real loopback pods. Scale-up, scale-down, a pod turning not-ready,
 * a terminating pod, the terminating-only fallback and deletion each change what is picked
 * within 200 ms of the watch event. An API server outage (several retries at the longest
 * backoff) keeps the last endpoints in use (requests keep flowing); when it returns, the watch resumes and catches up with the
 * changes made meanwhile.
 */
import { Agent, request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Balancer } from '../../src/balancing/balancer.js';
import { BalancedAgent } from '../../src/client/balanced-agent.js';
import { Cluster } from '../../src/cluster/cluster.js';
import { clusterInternals } from '../../src/cluster/cluster-internals.js';
import { SeededRandom } from '../../src/core/random.js';
import { createKubernetesEndpointSource, type KubernetesEndpointSource } from '../../src/discovery/kubernetes/index.js';
import { type EndpointSpec, endpointSlice, FakeKubeApiServer, service } from '../support/fake-kube-api-server.js';
import { type ServicePods, startServicePods } from './service-pods.js';
import { fastOptions } from './source-helpers.js';

let api: FakeKubeApiServer;
let pods: ServicePods;
let client: Agent;
const closers: (() => Promise<void>)[] = [];
let counter = 0;
const latenciesMs: number[] = [];

beforeAll(async () => {
  api = await FakeKubeApiServer.start({ token: 'follow' });
  pods = await startServicePods(5);
  client = new Agent({ keepAliveTimeout: 1000 });
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(async () => {
  await client.close();
  await pods.close();
  await api.close();
  if (latenciesMs.length > 0) {
    const sorted = [...latenciesMs].sort((a, b) => a - b);
    process.stdout.write(
      `watch event → picker latency (ms): n=${sorted.length} median=${sorted[Math.floor(sorted.length / 2)]?.toFixed(1)} max=${sorted.at(-1)?.toFixed(1)}\n`,
    );
  }
});

const addr = (i: number): string => `127.0.3.${i}`;
/** The API outage: six times the Cluster test's longest backoff (500 ms). */
const OUTAGE_MS = 3000;

function setup(): string {
  const n = `follow${++counter}`;
  api.applyService(service({ name: 'web', namespace: n, ports: [{ name: 'http', port: 80, targetPort: pods.port }] }));
  return n;
}

function putSlice(namespace: string, name: string, endpoints: EndpointSpec[]): void {
  api.applyEndpointSlice(
    endpointSlice({ name, namespace, service: 'web', ports: [{ name: 'http', port: pods.port }], endpoints }),
  );
}

const keys = (...indexes: number[]): string[] => indexes.map((i) => `${addr(i)}:${pods.port}`).sort();

/**
 * Waits (up to 2 s) until `eligibleKeys()` equals `want`; returns the time it took from `since`
 * (recorded for the summary when `since` is the moment of a watch event).
 */
async function settle(eligibleKeys: () => string[], want: string[], since: number, record = true): Promise<number> {
  const target = [...want].sort().join(' ');
  const deadline = performance.now() + 2000;
  while (eligibleKeys().sort().join(' ') !== target) {
    if (performance.now() > deadline) {
      throw new Error(`picker holds [${eligibleKeys().join(' ')}], expected [${target}]`);
    }
    await new Promise((r) => setImmediate(r));
  }
  const ms = performance.now() - since;
  if (record) latenciesMs.push(ms);
  return ms;
}

/** Sends `n` requests, each to the endpoint the balancer picks; returns hits per pod address. */
async function sendViaBalancer(balancer: Balancer, n: number): Promise<Map<string, number>> {
  const seen = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const picked = balancer.picker.pick();
    if (picked.type !== 'picked') throw new Error(`nothing to pick: ${picked.reason}`);
    const { address, port } = picked.endpoint;
    const res = await request(`http://${address}:${port}/`, { dispatcher: client });
    const body = await res.body.text();
    seen.set(body, (seen.get(body) ?? 0) + 1);
  }
  return seen;
}

/** Sends `n` requests through a Cluster to the Service name; returns hits per pod address. */
async function sendViaCluster(cluster: Cluster, namespace: string, n: number): Promise<Map<string, number>> {
  const seen = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const res = await request(`http://web.${namespace}.svc/`, { dispatcher: cluster.dispatcher });
    const body = await res.body.text();
    expect(res.statusCode).toBe(200);
    seen.set(body, (seen.get(body) ?? 0) + 1);
  }
  return seen;
}

const served = (hits: Map<string, number>): string[] => [...hits.keys()].sort();
const maxOverMean = (hits: Map<string, number>): number => {
  const counts = [...hits.values()];
  return Math.max(...counts) / (counts.reduce((a, b) => a + b, 0) / counts.length);
};

describe('a Balancer fed by a k8s:/// source', () => {
  it('follows scale-up, scale-down, not-ready, terminating, the fallback and deletion within 200 ms', async () => {
    const n = setup();
    putSlice(n, 'web-a', [{ address: addr(1) }, { address: addr(2) }, { address: addr(3) }]);
    const source: KubernetesEndpointSource = createKubernetesEndpointSource(`k8s:///web.${n}:80`, fastOptions(api));
    closers.push(() => source.close());
    const balancer = new Balancer({ policy: 'round-robin', random: new SeededRandom(7) });
    source.subscribe((s) => balancer.update(s.endpoints));
    await source.ready();
    balancer.update(source.snapshot().endpoints);
    const eligible = () => balancer.picker.endpoints.map((t) => t.endpoint.key);
    await settle(eligible, keys(1, 2, 3), performance.now(), false);
    let hits = await sendViaBalancer(balancer, 30);
    expect(served(hits)).toEqual([addr(1), addr(2), addr(3)]);
    expect(maxOverMean(hits)).toBeLessThanOrEqual(1.2);

    const step = async (change: () => void, want: string[]): Promise<void> => {
      const t0 = performance.now();
      change();
      expect(await settle(eligible, want, t0)).toBeLessThanOrEqual(200);
    };

    // Scale up: a second slice with a fourth pod.
    await step(() => putSlice(n, 'web-b', [{ address: addr(4) }]), keys(1, 2, 3, 4));
    hits = await sendViaBalancer(balancer, 40);
    expect(served(hits)).toEqual([addr(1), addr(2), addr(3), addr(4)]);

    // Scale down: pod 1 leaves.
    await step(() => putSlice(n, 'web-a', [{ address: addr(2) }, { address: addr(3) }]), keys(2, 3, 4));
    // Pod 2 turns not-ready (readiness probe failing).
    await step(() => putSlice(n, 'web-a', [{ address: addr(2), ready: false }, { address: addr(3) }]), keys(3, 4));
    // Pod 3 terminating but still serving: no new requests while others are ready.
    await step(
      () =>
        putSlice(n, 'web-a', [
          { address: addr(2), ready: false },
          { address: addr(3), ready: false, serving: true, terminating: true },
        ]),
      keys(4),
    );
    hits = await sendViaBalancer(balancer, 10);
    expect(served(hits)).toEqual([addr(4)]);

    // Pod 4 terminating too: none ready → fall back to serving-and-terminating pods (3 and 4).
    await step(
      () => putSlice(n, 'web-b', [{ address: addr(4), ready: false, serving: true, terminating: true }]),
      keys(3, 4),
    );
    hits = await sendViaBalancer(balancer, 20);
    expect(served(hits)).toEqual([addr(3), addr(4)]);

    // Deletion: every slice gone → nothing to pick.
    await step(() => {
      api.deleteEndpointSlice(n, 'web-a');
      api.deleteEndpointSlice(n, 'web-b');
    }, []);
    expect(balancer.picker.pick()).toEqual({ type: 'none', reason: 'no-endpoints' });
    expect(source.snapshot().status.state).toBe('ok');
  });
});

describe('a Cluster routing k8s:/// (the engine behind BalancedAgent and the proxy)', () => {
  it('follows pods end to end, and keeps serving through an API outage, then catches up', async () => {
    const n = setup();
    putSlice(n, 'web-a', [{ address: addr(1) }, { address: addr(2) }, { address: addr(3) }]);
    const cluster = new Cluster({
      name: `web.${n}.svc:80`,
      target: `k8s:///web.${n}:80`,
      policy: 'round-robin',
      outlierDetection: false,
      random: new SeededRandom(11),
      sourceOptions: { kubernetes: fastOptions(api, { backoffBaseMs: 50, backoffMaxMs: 500 }) },
    });
    closers.push(() => cluster.close());
    const eligible = () => clusterInternals(cluster).balancer.picker.endpoints.map((t) => t.endpoint.key);
    await settle(eligible, keys(1, 2, 3), performance.now(), false);
    let hits = await sendViaCluster(cluster, n, 30);
    expect(served(hits)).toEqual([addr(1), addr(2), addr(3)]);

    // Scale up, then a pod turning not-ready, through the same path.
    let t0 = performance.now();
    putSlice(n, 'web-a', [{ address: addr(1) }, { address: addr(2) }, { address: addr(3) }, { address: addr(4) }]);
    expect(await settle(eligible, keys(1, 2, 3, 4), t0)).toBeLessThanOrEqual(200);
    t0 = performance.now();
    putSlice(n, 'web-a', [
      { address: addr(1) },
      { address: addr(2), ready: false },
      { address: addr(3) },
      { address: addr(4) },
    ]);
    expect(await settle(eligible, keys(1, 3, 4), t0)).toBeLessThanOrEqual(200);
    hits = await sendViaCluster(cluster, n, 30);
    expect(served(hits)).toEqual([addr(1), addr(3), addr(4)]);

    // The API server goes away. Meanwhile pod 1 is removed and pod 5 added. The outage lasts
    // OUTAGE_MS (six times the longest backoff: the source retries at its cap several times;
    // from then on every retry is the same, so a longer outage tests nothing more) and until
    // 100 requests were served during it, whichever is later; the deadline only catches a hang.
    await api.down();
    putSlice(n, 'web-a', [{ address: addr(3) }, { address: addr(4) }, { address: addr(5) }]);
    const outageFrom = performance.now();
    const deadline = outageFrom + 20_000;
    let during = 0;
    let failures = 0;
    let sawDegraded = false;
    const duringHits = new Map<string, number>();
    const outageOver = () => performance.now() - outageFrom >= OUTAGE_MS && during >= 100 && sawDegraded;
    while (!outageOver() && performance.now() < deadline && during < 2000) {
      try {
        const res = await request(`http://web.${n}.svc/`, { dispatcher: cluster.dispatcher });
        const body = await res.body.text();
        duringHits.set(body, (duringHits.get(body) ?? 0) + 1);
      } catch {
        failures++;
      }
      during++;
      if (cluster.source.snapshot().status.state === 'degraded') sawDegraded = true;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(failures).toBe(0);
    expect(during).toBeGreaterThanOrEqual(100);
    expect(sawDegraded).toBe(true);
    // The last known endpoints kept serving, evenly.
    expect(served(duringHits)).toEqual([addr(1), addr(3), addr(4)]);
    expect(maxOverMean(duringHits)).toBeLessThanOrEqual(1.1);
    const snap = cluster.source.snapshot();
    expect(snap.status.state).toBe('degraded');
    if (snap.status.state === 'degraded') expect(snap.status.error.code).toBe('EVENLB_DISCOVERY_FAILED');

    // Back: the watch resumes from its resourceVersion and applies what changed meanwhile.
    await api.up();
    await settle(eligible, keys(3, 4, 5), performance.now(), false);
    await api.waitFor(() => cluster.source.snapshot().status.state === 'ok', 5000, 'status ok');
    hits = await sendViaCluster(cluster, n, 30);
    expect(served(hits)).toEqual([addr(3), addr(4), addr(5)]);
    const resumed = api
      .requestsMatching({ verb: 'watch', resource: 'endpointslices', namespace: n })
      .filter((r) => r.statusCode === 200);
    expect(api.requestsMatching({ verb: 'list', resource: 'endpointslices', namespace: n })).toHaveLength(1);
    expect(resumed.length).toBeGreaterThanOrEqual(2);
  }, 30_000);
});

describe('a BalancedAgent routing <svc>.<ns>.svc to k8s:///', () => {
  it('sends requests to the pods of the Service and follows them', async () => {
    const n = setup();
    putSlice(n, 'web-a', [{ address: addr(1) }, { address: addr(2) }]);
    const agent = new BalancedAgent({
      kubernetes: true,
      policy: 'round-robin',
      outlierDetection: false,
      random: new SeededRandom(13),
      sourceOptions: { kubernetes: fastOptions(api) },
    });
    closers.push(() => agent.close());
    const send = async (count: number): Promise<Map<string, number>> => {
      const seen = new Map<string, number>();
      for (let i = 0; i < count; i++) {
        const res = await request(`http://web.${n}.svc:80/`, { dispatcher: agent });
        expect(res.statusCode).toBe(200);
        const body = await res.body.text();
        seen.set(body, (seen.get(body) ?? 0) + 1);
      }
      return seen;
    };
    let hits = await send(20); // the first request creates the route and waits for discovery
    expect(served(hits)).toEqual([addr(1), addr(2)]);
    expect(maxOverMean(hits)).toBeLessThanOrEqual(1.2);
    const cluster = agent.clusters()[0];
    if (cluster === undefined) throw new Error('no route');
    expect(cluster.source.target).toBe(`k8s:///web.${n}:80`);
    const eligible = () => clusterInternals(cluster).balancer.picker.endpoints.map((t) => t.endpoint.key);

    let t0 = performance.now();
    putSlice(n, 'web-a', [{ address: addr(1) }, { address: addr(2) }, { address: addr(5) }]);
    expect(await settle(eligible, keys(1, 2, 5), t0)).toBeLessThanOrEqual(200);
    hits = await send(30);
    expect(served(hits)).toEqual([addr(1), addr(2), addr(5)]);

    t0 = performance.now();
    putSlice(n, 'web-a', [
      { address: addr(1), ready: false, serving: true, terminating: true },
      { address: addr(2) },
      { address: addr(5) },
    ]);
    expect(await settle(eligible, keys(2, 5), t0)).toBeLessThanOrEqual(200);
    hits = await send(20);
    expect(served(hits)).toEqual([addr(2), addr(5)]);
    expect(agent.stats().routes[0]?.discovery).toBe('ok');
  });
});
