/**
 * The watch's default timing, on a virtual clock against the wire-level fake API server: a
 * black-holed watch (connection open, nothing sent) is caught and a change made meanwhile is
 * published within 150 s with default options; each watch asks the server to end it after a
 * random 5–10 minutes, and one the server keeps open anyway is ended and resumed from its last
 * resourceVersion without a LIST.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { createRandom } from '../../src/core/random.js';
import type { DiscoverySnapshot } from '../../src/discovery/endpoint-source.js';
import { createKubernetesEndpointSource, type KubernetesEndpointSource } from '../../src/discovery/kubernetes/index.js';
import { endpointSlice, FakeKubeApiServer, service } from '../support/fake-kube-api-server.js';
import { okWith, waitForSnapshot } from './source-helpers.js';

let api: FakeKubeApiServer;
const sources: KubernetesEndpointSource[] = [];
let counter = 0;
const PORTS = [{ name: 'http', port: 8080 }];

beforeAll(async () => {
  api = await FakeKubeApiServer.start({ token: 'secret' });
});
afterEach(async () => {
  await Promise.all(sources.splice(0).map((s) => s.close()));
});
afterAll(async () => {
  await api.close();
});

function setup(addresses: string[]): string {
  const n = `defaults${++counter}`;
  api.applyService(service({ name: 'web', namespace: n, ports: [{ name: 'http', port: 80, targetPort: 8080 }] }));
  putSlice(n, addresses);
  return n;
}

function putSlice(namespace: string, addresses: string[]): void {
  api.applyEndpointSlice(
    endpointSlice({
      name: 'web-a',
      namespace,
      service: 'web',
      ports: PORTS,
      endpoints: addresses.map((address) => ({ address })),
    }),
  );
}

/** A source with every timing option at its default, on `clock`. */
function open(namespace: string, clock: ManualClock, seed: number): KubernetesEndpointSource {
  const source = createKubernetesEndpointSource(`k8s:///web.${namespace}:80`, {
    connection: api.connection(),
    clock,
    random: createRandom(seed),
    onWarning: () => {},
  });
  sources.push(source);
  return source;
}

const realPause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Advances `clock` in 1 s steps (letting real I/O run between steps) until `done()` holds or
 * `limitMs` of virtual time passed; returns the virtual time it took, or undefined.
 */
async function advanceUntil(
  clock: ManualClock,
  done: () => boolean,
  limitMs: number,
  eachSecond: (elapsedMs: number) => void = () => {},
): Promise<number | undefined> {
  const start = clock.now();
  while (clock.now() - start <= limitMs) {
    if (done()) return clock.now() - start;
    clock.advance(1000);
    eachSecond(clock.now() - start);
    await realPause(5);
  }
  return done() ? clock.now() - start : undefined;
}

const has =
  (source: KubernetesEndpointSource, ...keys: string[]) =>
  () =>
    okWith(...keys)(source.snapshot() as DiscoverySnapshot);

const sliceWatches = (namespace: string) =>
  api.requestsMatching({ verb: 'watch', resource: 'endpointslices', namespace });

describe('default watch timing', () => {
  it('a black-holed watch is restarted and the change made meanwhile is published within 150 s', async () => {
    const n = setup(['10.0.0.1']);
    const clock = new ManualClock();
    const source = open(n, clock, 1);
    await waitForSnapshot(source, okWith('10.0.0.1:8080'));
    await api.waitFor(() => api.openWatches({ resource: 'endpointslices', namespace: n }) === 1);

    expect(api.stallWatches()).toBeGreaterThanOrEqual(1);
    putSlice(n, ['10.0.0.1', '10.0.0.2']); // the stalled stream never delivers this
    // Well within the idle timeout the stale set is still what requests see.
    expect(await advanceUntil(clock, has(source, '10.0.0.1:8080', '10.0.0.2:8080'), 60_000)).toBeUndefined();
    const took = await advanceUntil(clock, has(source, '10.0.0.1:8080', '10.0.0.2:8080'), 90_000);
    expect(took, 'the change reached the source').toBeDefined();
    expect(60_000 + (took ?? 0)).toBeLessThanOrEqual(150_000);
    expect(source.stats().endpointSlices.idleRestarts).toBeGreaterThanOrEqual(1);
    expect(source.snapshot().status.state).toBe('ok');
  });

  it('a watch kept alive by bookmarks is not restarted for silence', async () => {
    const n = setup(['10.0.0.1']);
    const clock = new ManualClock();
    const source = open(n, clock, 2);
    await waitForSnapshot(source, okWith('10.0.0.1:8080'));
    await api.waitFor(() => api.openWatches({ resource: 'endpointslices', namespace: n }) === 1);
    // Bookmarks once a virtual minute, as kube-apiserver sends them, for four minutes.
    await advanceUntil(
      clock,
      () => false,
      240_000,
      (elapsed) => elapsed % 60_000 === 0 && api.sendBookmarks(),
    );
    expect(source.stats().endpointSlices.idleRestarts).toBe(0);
    expect(sliceWatches(n)).toHaveLength(1);
  });

  it('asks for a random 5–10 minute timeoutSeconds and ends a watch the server keeps open past it', async () => {
    const n = setup(['10.0.0.1']);
    const clock = new ManualClock();
    const source = open(n, clock, 3);
    await waitForSnapshot(source, okWith('10.0.0.1:8080'));
    await api.waitFor(() => api.openWatches({ resource: 'endpointslices', namespace: n }) === 1);
    const lists = api.requestsMatching({ verb: 'list', resource: 'endpointslices', namespace: n }).length;
    const first = Number(sliceWatches(n)[0]?.query.timeoutSeconds);
    expect(first).toBeGreaterThanOrEqual(300);
    expect(first).toBeLessThan(600);

    // The fake server's own timeoutSeconds runs on real time, so on the virtual clock it
    // ignores the timeout; bookmarks keep the watch from looking silent.
    const took = await advanceUntil(
      clock,
      () => sliceWatches(n).length >= 2,
      first * 1000 + 61_000,
      (elapsed) => elapsed % 30_000 === 0 && api.sendBookmarks(),
    );
    expect(took, 'the overlong watch was ended').toBeDefined();
    expect(took).toBeGreaterThanOrEqual(first * 1000);
    await api.waitFor(() => sliceWatches(n).length >= 2);
    const stats = source.stats().endpointSlices;
    expect(stats.lifetimeRestarts).toBeGreaterThanOrEqual(1);
    expect(stats.idleRestarts).toBe(0);
    expect(stats.failures).toBe(0);
    // Resumed from the last resourceVersion, not re-listed.
    expect(api.requestsMatching({ verb: 'list', resource: 'endpointslices', namespace: n })).toHaveLength(lists);
    const second = sliceWatches(n)[1];
    expect(second?.query.resourceVersion).toBeDefined();
    // Drawn again for every watch (seeded, so this holds for this run's draws).
    expect(Number(second?.query.timeoutSeconds)).toBeGreaterThanOrEqual(300);
    expect(Number(second?.query.timeoutSeconds)).not.toBe(first);
    expect(source.snapshot().status.state).toBe('ok');
  });
});
