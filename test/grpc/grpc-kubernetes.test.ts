/**
 * `k8s:///` targets on a grpc-js channel against the wire-level fake Kubernetes API server: the
 * Service's pods are real grpc-js servers on 127.0.4.x sharing one port. While calls flow, a
 * scale-up gets calls within 1 s, a scaled-down pod and a terminating pod get none from 1 s
 * after the change, and with the API server down the channel keeps calling the last known pods
 * (discovery `degraded`) without a failed call. A second channel to the Service shares the watch.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.js';
import { type GrpcRegistration, registerGrpc } from '../../src/grpc/index.js';
import { fastOptions } from '../kubernetes/source-helpers.js';
import { type EndpointSpec, endpointSlice, FakeKubeApiServer, service } from '../support/fake-kube-api-server.js';
import { call, EchoClient, type EchoServer, startEchoServer, waitUntil } from './echo-servers.js';

let api: FakeKubeApiServer;
let evenlb: GrpcRegistration;
const pods: EchoServer[] = [];
let client: EchoClient | undefined;

beforeAll(async () => {
  api = await FakeKubeApiServer.start({ token: 'grpc' });
  let port = 0;
  for (let i = 1; i <= 4; i++) {
    const pod = await startEchoServer(`pod-${i}`, `127.0.4.${i}`, port);
    port = pod.port;
    pods.push(pod);
  }
  evenlb = registerGrpc(grpc, {
    random: new SeededRandom(8),
    sourceOptions: { kubernetes: fastOptions(api) },
  });
});
afterAll(async () => {
  client?.close();
  await evenlb.close();
  await Promise.all(pods.map((p) => p.close()));
  await api.close();
});

const pod = (i: number): EchoServer => pods[i - 1] as EchoServer;

function putSlice(endpoints: EndpointSpec[]): void {
  api.applyEndpointSlice(
    endpointSlice({
      name: 'echo-abc',
      namespace: 'rpc',
      service: 'echo',
      ports: [{ name: 'grpc', port: pod(1).port }],
      endpoints,
    }),
  );
}

describe('k8s:/// target', () => {
  it('follows scale-up, scale-down and terminating within 1 s; API server down keeps the last endpoints', async () => {
    api.applyService(
      service({ name: 'echo', namespace: 'rpc', ports: [{ name: 'grpc', port: 50051, targetPort: pod(1).port }] }),
    );
    putSlice([{ address: pod(1).address }, { address: pod(2).address }]);
    client = new EchoClient('k8s:///echo.rpc:grpc', grpc.credentials.createInsecure());
    const c = client;
    const log: { server: string; atMs: number }[] = [];
    const failures: string[] = [];
    let stopped = false;
    let sent = 0;
    const deadline = performance.now() + 30_000;
    const loops = Promise.all(
      Array.from({ length: 4 }, async () => {
        while (!stopped && sent < 40_000 && performance.now() < deadline) {
          sent++;
          const r = await call(c, 'delay:1');
          if (r.ok) log.push({ server: r.server, atMs: performance.now() });
          else failures.push(`${r.error.code} ${r.error.details}`);
        }
      }),
    );
    const callsTo = (i: number, sinceMs: number) =>
      log.filter((e) => e.server === pod(i).name && e.atMs > sinceMs).length;
    const route = () => evenlb.stats().routes.find((r) => r.target === 'k8s:///echo.rpc:grpc');
    try {
      await waitUntil(() => callsTo(1, 0) > 20 && callsTo(2, 0) > 20, 5000, 'calls to pods 1 and 2');
      expect(callsTo(3, 0)).toBe(0);

      const up = performance.now();
      putSlice([{ address: pod(1).address }, { address: pod(2).address }, { address: pod(3).address }]);
      const upMs = await waitUntil(() => callsTo(3, up) > 0, 3000, 'a call to the new pod');
      expect(upMs).toBeLessThanOrEqual(1000);

      const down = performance.now();
      putSlice([{ address: pod(2).address }, { address: pod(3).address }, { address: pod(4).address }]);
      await waitUntil(() => callsTo(4, down) > 0, 3000, 'a call to pod 4');
      await waitUntil(() => performance.now() - down > 1300, 2000, 'time to pass');
      expect(callsTo(1, down + 1000)).toBe(0);

      const term = performance.now();
      putSlice([
        { address: pod(2).address, terminating: true },
        { address: pod(3).address },
        { address: pod(4).address },
      ]);
      await waitUntil(() => performance.now() - term > 1300, 2000, 'time to pass');
      expect(callsTo(2, term + 1000)).toBe(0);
      expect(callsTo(3, term + 1000)).toBeGreaterThan(0);

      // The API server goes away: the last known pods keep serving.
      await api.down();
      const outage = performance.now();
      await waitUntil(() => route()?.discovery === 'degraded', 5000, 'discovery to report degraded');
      await waitUntil(() => performance.now() - outage > 1500, 3000, 'time to pass');
      expect(callsTo(3, outage + 200)).toBeGreaterThan(10);
      expect(callsTo(4, outage + 200)).toBeGreaterThan(10);
      process.stdout.write(
        `k8s:///: scale-up first call after ${upMs.toFixed(0)} ms; during the outage pods 3/4 served ${callsTo(3, outage)}/${callsTo(4, outage)}\n`,
      );
      await api.up();
      await waitUntil(() => route()?.discovery === 'ok', 5000, 'discovery to recover');
    } finally {
      stopped = true;
      await loops;
    }
    expect(failures).toEqual([]);
    // A second channel to the same Service shares the source (and its one list+watch).
    const lists = () => api.requestsMatching({ verb: 'list', resource: 'endpointslices', namespace: 'rpc' }).length;
    const listsBefore = lists();
    const second = new EchoClient('k8s:///echo.rpc:grpc', grpc.credentials.createInsecure());
    try {
      const r = await call(second);
      expect(r.ok).toBe(true);
      expect(lists()).toBe(listsBefore);
      expect(evenlb.stats().routes.filter((x) => x.target === 'k8s:///echo.rpc:grpc')).toHaveLength(2);
    } finally {
      second.close();
    }
    const endpoints = route()?.endpoints ?? [];
    expect(endpoints.find((e) => e.key === pod(2).key)?.state).toBe('not-ready');
    expect(endpoints.find((e) => e.key === pod(3).key)?.pod).toBeDefined();
  });

  it('a Service that does not exist fails calls at once with UNAVAILABLE naming it', async () => {
    const missing = new EchoClient('k8s:///missing.rpc:grpc', grpc.credentials.createInsecure());
    try {
      const r = await call(missing);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.error.code).toBe(grpc.status.UNAVAILABLE);
      expect(r.error.details).toMatch(/missing/);
      expect(evenlb.stats().routes.find((x) => x.target === 'k8s:///missing.rpc:grpc')?.discovery).toBe('not-found');
    } finally {
      missing.close();
    }
  });
});
