/**
 * The reconnect schedule on the injected clock: with the default timing (1 s → 30 s) and a
 * ManualClock, a failing API server is retried exactly when the jittered exponential backoff
 * says — never before half the step, always by the full step — over real HTTP. A success
 * resets the schedule.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { SeededRandom } from '../../src/core/random.js';
import { createKubernetesEndpointSource, KubernetesWatchCache } from '../../src/discovery/kubernetes/index.js';
import { endpointSlice, FakeKubeApiServer, service } from '../support/fake-kube-api-server.js';
import { okWith, waitForSnapshot } from './source-helpers.js';

let api: FakeKubeApiServer;

beforeAll(async () => {
  api = await FakeKubeApiServer.start();
  api.applyService(service({ name: 'web', namespace: 'sched', ports: [{ port: 80, targetPort: 8080 }] }));
  api.applyEndpointSlice(
    endpointSlice({
      name: 'web-a',
      namespace: 'sched',
      service: 'web',
      ports: [{ port: 8080 }],
      endpoints: [{ address: '10.0.0.1' }],
    }),
  );
});
afterAll(async () => {
  await api.close();
});

it('retries a failing LIST on the 1 s → 30 s jittered exponential schedule of the injected clock', async () => {
  const clock = new ManualClock();
  api.failRequests({ count: 1_000_000, statusCode: 503, verb: 'list', resource: 'endpointslices' });
  const source = createKubernetesEndpointSource('k8s:///web.sched:80', {
    connection: api.connection(),
    clock,
    random: new SeededRandom(5),
    cache: new KubernetesWatchCache(),
  });
  const lists = () => api.requestsMatching({ verb: 'list', resource: 'endpointslices', namespace: 'sched' }).length;
  const failures = () => source.stats().endpointSlices.failures;
  try {
    await api.waitFor(() => failures() === 1, 5000, 'the first failure');
    expect(lists()).toBe(1);
    expect(source.snapshot().status.state).toBe('degraded');
    const ceilings = [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000];
    for (const [i, ceiling] of ceilings.entries()) {
      // Just before the earliest possible retry: nothing.
      clock.advance(ceiling / 2 - 1);
      await new Promise((r) => setTimeout(r, 30));
      expect(lists()).toBe(i + 1);
      // By the full step: exactly one retry.
      clock.advance(ceiling / 2 + 1);
      await api.waitFor(() => failures() === i + 2, 5000, `failure ${i + 2}`);
      expect(lists()).toBe(i + 2);
    }
    // Recovery resets the schedule: the next success arrives on the next step and publishes.
    api.clearFailures();
    clock.advance(30_000);
    await waitForSnapshot(source, okWith('10.0.0.1:8080'));
  } finally {
    await source.close();
  }
});
