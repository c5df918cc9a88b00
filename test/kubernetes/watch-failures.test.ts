/**
 * The watch against a misbehaving API server: 410 Expired in the stream, on the watch request,
 * and on resume after the history was compacted (re-list, nothing duplicated or lost, nothing
 * published when nothing changed); clean ends resumed from the last resourceVersion without a
 * LIST; bookmarks advancing it; a stalled watch restarted; failing requests keeping the last
 * set (degraded) with backoff; a rotated token file re-read.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/core/errors.js';
import type { DiscoverySnapshot } from '../../src/discovery/endpoint-source.js';
import {
  createKubernetesEndpointSource,
  type KubernetesEndpointSource,
  type KubernetesSourceOptions,
} from '../../src/discovery/kubernetes/index.js';
import { endpointSlice, FakeKubeApiServer, service } from '../support/fake-kube-api-server.js';
import { fastOptions, okWith, waitForSnapshot } from './source-helpers.js';

let api: FakeKubeApiServer;
const sources: KubernetesEndpointSource[] = [];
let counter = 0;
const PORTS = [{ name: 'http', port: 8080 }];

beforeAll(async () => {
  api = await FakeKubeApiServer.start({ token: 'secret' });
});
afterEach(async () => {
  api.clearFailures();
  await Promise.all(sources.splice(0).map((s) => s.close()));
});
afterAll(async () => {
  await api.close();
});

/** A namespace with Service `web` (port 80 → "http") and the given slices (address lists). */
function setup(slices: Record<string, string[]>): string {
  const n = `fail${++counter}`;
  api.applyService(service({ name: 'web', namespace: n, ports: [{ name: 'http', port: 80, targetPort: 8080 }] }));
  for (const [name, addrs] of Object.entries(slices)) putSlice(n, name, addrs);
  return n;
}

function putSlice(namespace: string, name: string, addrs: string[]): void {
  api.applyEndpointSlice(
    endpointSlice({ name, namespace, service: 'web', ports: PORTS, endpoints: addrs.map((address) => ({ address })) }),
  );
}

function open(namespace: string, extra: KubernetesSourceOptions = {}): KubernetesEndpointSource {
  const source = createKubernetesEndpointSource(`k8s:///web.${namespace}:80`, fastOptions(api, extra));
  sources.push(source);
  return source;
}

/** Records every snapshot a source publishes. */
function record(source: KubernetesEndpointSource): DiscoverySnapshot[] {
  const log: DiscoverySnapshot[] = [];
  source.subscribe((s) => log.push(s));
  return log;
}

const sliceRequests = (namespace: string, verb: 'list' | 'watch') =>
  api.requestsMatching({ verb, resource: 'endpointslices', namespace }).length;

describe('410 Expired', () => {
  it('re-lists after an in-stream 410 and publishes nothing when nothing changed', async () => {
    const n = setup({ 'web-a': ['10.0.0.1', '10.0.0.2'] });
    const source = open(n);
    await waitForSnapshot(source, okWith('10.0.0.1:8080', '10.0.0.2:8080'));
    await api.waitFor(() => api.openWatches({ resource: 'endpointslices', namespace: n }) === 1);
    const log = record(source);
    const lists = sliceRequests(n, 'list');
    const watches = sliceRequests(n, 'watch');

    expect(api.expireWatches()).toBeGreaterThanOrEqual(2); // the slices and the Service watch
    await api.waitFor(() => sliceRequests(n, 'list') === lists + 1, 5000, 're-list');
    await api.waitFor(() => sliceRequests(n, 'watch') === watches + 1, 5000, 'new watch');
    expect(log).toEqual([]);
    expect(source.stats().endpointSlices.expired).toBe(1);

    // The new watch works.
    putSlice(n, 'web-a', ['10.0.0.1', '10.0.0.2', '10.0.0.3']);
    await waitForSnapshot(source, okWith('10.0.0.1:8080', '10.0.0.2:8080', '10.0.0.3:8080'));
    expect(log).toHaveLength(1);
  });

  it('re-lists when the history was compacted while disconnected: nothing duplicated or lost', async () => {
    const n = setup({ 'web-a': ['10.0.0.1', '10.0.0.2'], 'web-b': ['10.0.0.3'] });
    const source = open(n);
    await waitForSnapshot(source, okWith('10.0.0.1:8080', '10.0.0.2:8080', '10.0.0.3:8080'));
    await api.waitFor(() => api.openWatches({ namespace: n }) === 2);

    // Cut the watches and refuse new ones, then change everything.
    api.failRequests({ count: 1_000_000, statusCode: 503, verb: 'watch' });
    api.dropWatches();
    const degraded = await waitForSnapshot(source, (s) => s.status.state === 'degraded');
    expect(degraded.endpoints.size).toBe(3); // the last known set is kept
    api.deleteEndpointSlice(n, 'web-a');
    putSlice(n, 'web-b', ['10.0.0.3', '10.0.0.4']);
    putSlice(n, 'web-c', ['10.0.0.5', '10.0.0.6']);
    putSlice(n, 'web-c', ['10.0.0.5']); // 10.0.0.6 came and went
    putSlice(n, 'web-d', ['10.0.0.4']); // 10.0.0.4 in two slices
    api.compactHistory();
    const lists = sliceRequests(n, 'list');
    api.clearFailures();

    const after = await waitForSnapshot(source, okWith('10.0.0.3:8080', '10.0.0.4:8080', '10.0.0.5:8080'));
    expect(after.endpoints.endpoints).toHaveLength(3);
    expect(sliceRequests(n, 'list')).toBe(lists + 1);
    expect(source.stats().endpointSlices.expired).toBe(1);
  });

  it('re-lists after an HTTP 410 on the watch request', async () => {
    const n = setup({ 'web-a': ['10.0.0.1'] });
    const source = open(n);
    await waitForSnapshot(source, okWith('10.0.0.1:8080'));
    await api.waitFor(() => api.openWatches({ resource: 'endpointslices', namespace: n }) === 1);
    const lists = sliceRequests(n, 'list');
    api.failRequests({ count: 1, statusCode: 410, verb: 'watch', resource: 'endpointslices' });
    api.dropWatches();
    putSlice(n, 'web-a', ['10.0.0.1', '10.0.0.7']);
    await waitForSnapshot(source, okWith('10.0.0.1:8080', '10.0.0.7:8080'));
    expect(sliceRequests(n, 'list')).toBe(lists + 1);
  });

  it('backs off when every watch is answered 410 (no list/watch busy loop)', async () => {
    const n = setup({ 'web-a': ['10.0.0.1'] });
    const source = open(n, { backoffBaseMs: 20, backoffMaxMs: 160 });
    await waitForSnapshot(source, okWith('10.0.0.1:8080'));
    api.failRequests({ count: 1_000_000, statusCode: 410, verb: 'watch', resource: 'endpointslices' });
    const lists = sliceRequests(n, 'list');
    const startedAt = Date.now();
    api.dropWatches();
    await new Promise((r) => setTimeout(r, 1000));
    const relists = sliceRequests(n, 'list') - lists;
    expect(relists).toBeGreaterThanOrEqual(3);
    expect(relists).toBeLessThanOrEqual(Math.ceil((Date.now() - startedAt) / 80) + 6);
    // A 410 is the protocol asking for a re-list, not an outage: the set stays current.
    expect(source.snapshot().status.state).toBe('ok');
    api.clearFailures();
    putSlice(n, 'web-a', ['10.0.0.1', '10.0.0.2']);
    await waitForSnapshot(source, okWith('10.0.0.1:8080', '10.0.0.2:8080'));
  });
});

describe('resuming', () => {
  it('resumes a cleanly ended watch from the last resourceVersion without a LIST', async () => {
    const n = setup({ 'web-a': ['10.0.0.1'] });
    const source = open(n, { watchTimeoutSeconds: 3600 });
    await waitForSnapshot(source, okWith('10.0.0.1:8080'));
    await api.waitFor(() => api.openWatches({ resource: 'endpointslices', namespace: n }) === 1);
    const first = api.requestsMatching({ verb: 'watch', resource: 'endpointslices', namespace: n });
    expect(first[0]?.query).toMatchObject({ allowWatchBookmarks: 'true', watch: '1' });
    // A random 1–2× the configured base, as client-go spreads watch timeouts.
    expect(Number(first[0]?.query.timeoutSeconds)).toBeGreaterThanOrEqual(3600);
    expect(Number(first[0]?.query.timeoutSeconds)).toBeLessThan(7200);
    expect(first[0]?.query.labelSelector).toBe('kubernetes.io/service-name=web');

    putSlice(n, 'web-a', ['10.0.0.1', '10.0.0.2']);
    await waitForSnapshot(source, okWith('10.0.0.1:8080', '10.0.0.2:8080'));
    const rvAfterChange = api.getEndpointSlice(n, 'web-a')?.metadata.resourceVersion;
    const lists = sliceRequests(n, 'list');
    api.endWatches();
    await api.waitFor(() => sliceRequests(n, 'watch') === 2, 5000, 'resumed watch');
    const resumed = api.requestsMatching({ verb: 'watch', resource: 'endpointslices', namespace: n })[1];
    expect(resumed?.query.resourceVersion).toBe(rvAfterChange);
    expect(sliceRequests(n, 'list')).toBe(lists);

    // Bookmarks move the resourceVersion forward even when nothing of ours changed.
    await api.waitFor(() => api.openWatches({ resource: 'endpointslices', namespace: n }) === 1);
    setup({ 'unrelated-a': ['10.9.0.1'] }); // events elsewhere advance the global version
    api.sendBookmarks();
    const bookmarkRv = String(api.resourceVersion);
    // Let the bookmark arrive before ending the stream: a follow-up event proves ordering.
    putSlice(n, 'web-a', ['10.0.0.1', '10.0.0.2', '10.0.0.3']);
    await waitForSnapshot(source, okWith('10.0.0.1:8080', '10.0.0.2:8080', '10.0.0.3:8080'));
    api.sendBookmarks();
    const latest = String(api.resourceVersion);
    expect(Number(latest)).toBeGreaterThan(Number(bookmarkRv));
    await new Promise((r) => setTimeout(r, 50));
    api.endWatches();
    await api.waitFor(() => sliceRequests(n, 'watch') === 3, 5000, 'second resumed watch');
    const third = api.requestsMatching({ verb: 'watch', resource: 'endpointslices', namespace: n })[2];
    expect(third?.query.resourceVersion).toBe(latest);
  });

  it('restarts a watch that went silent', async () => {
    const n = setup({ 'web-a': ['10.0.0.1'] });
    const source = open(n, { watchIdleTimeoutMs: 300 });
    await waitForSnapshot(source, okWith('10.0.0.1:8080'));
    await api.waitFor(() => api.openWatches({ resource: 'endpointslices', namespace: n }) === 1);
    api.stallWatches();
    putSlice(n, 'web-a', ['10.0.0.1', '10.0.0.2']); // not delivered by the stalled stream
    await waitForSnapshot(source, okWith('10.0.0.1:8080', '10.0.0.2:8080'), 5000, 'the change after the restart');
    expect(source.stats().endpointSlices.idleRestarts).toBeGreaterThanOrEqual(1);
    expect(source.snapshot().status.state).toBe('ok');
  });
});

describe('failing requests', () => {
  it('keeps the last set while the API fails, backs off exponentially, and recovers', async () => {
    const n = setup({ 'web-a': ['10.0.0.1', '10.0.0.2'] });
    const source = open(n, { backoffBaseMs: 20, backoffMaxMs: 160 });
    await waitForSnapshot(source, okWith('10.0.0.1:8080', '10.0.0.2:8080'));
    await api.waitFor(() => api.openWatches({ namespace: n }) === 2);
    const log = record(source);

    api.failRequests({ count: 1_000_000, statusCode: 500, resource: 'endpointslices' });
    const before = sliceRequests(n, 'watch');
    const startedAt = Date.now();
    api.dropWatches();
    const degraded = await waitForSnapshot(source, (s) => s.status.state === 'degraded');
    if (degraded.status.state !== 'degraded') throw new Error('unreachable');
    expect(degraded.status.error.code).toBe(ErrorCodes.DISCOVERY_FAILED);
    expect(degraded.status.error.message).toMatch(/EndpointSlices of Service .*\/web: watch failed with HTTP 500/);
    expect(degraded.endpoints.size).toBe(2);

    await new Promise((r) => setTimeout(r, 1000));
    const elapsedMs = Date.now() - startedAt;
    const attempts = sliceRequests(n, 'watch') - before;
    // Without backoff a 500 answered in ~1 ms would mean hundreds of attempts. With base 20 ms,
    // cap 160 ms and jitter in [50%, 100%): at most 1 + elapsed / 10 ms... in practice ~10.
    expect(attempts).toBeGreaterThanOrEqual(3);
    expect(attempts).toBeLessThanOrEqual(Math.ceil(elapsedMs / 80) + 6);
    // Degraded was published once, not once per attempt; the set never emptied.
    expect(log.filter((s) => s.status.state === 'degraded')).toHaveLength(1);
    expect(log.every((s) => s.endpoints.size === 2)).toBe(true);

    api.clearFailures();
    await waitForSnapshot(source, okWith('10.0.0.1:8080', '10.0.0.2:8080'));
  });

  it('re-reads a rotated token file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'evenlb-token-'));
    try {
      const tokenFile = join(dir, 'token');
      await writeFile(tokenFile, 'secret\n');
      const n = setup({ 'web-a': ['10.0.0.1'] });
      const source = open(n, { connection: { server: api.url, tokenFile } });
      await waitForSnapshot(source, okWith('10.0.0.1:8080'));
      await api.waitFor(() => api.openWatches({ namespace: n }) === 2);

      // The kubelet rotates the file, the API server starts requiring the new token.
      await writeFile(tokenFile, 'rotated-1\n');
      api.setToken('rotated-1');
      api.dropWatches();
      putSlice(n, 'web-a', ['10.0.0.1', '10.0.0.2']);
      await waitForSnapshot(source, okWith('10.0.0.1:8080', '10.0.0.2:8080'));
      const last = api.requestsMatching({ resource: 'endpointslices', namespace: n }).at(-1);
      expect(last?.token).toBe('rotated-1');

      // The server moves first: 401 (degraded, set kept) until the file catches up.
      api.setToken('rotated-2');
      api.dropWatches();
      // (A reconnect racing the reset may first fail on the socket; the 401 follows.)
      const denied = await waitForSnapshot(
        source,
        (s) => s.status.state === 'degraded' && /HTTP 401/.test(s.status.error.message),
      );
      expect(denied.endpoints.size).toBe(2);
      await writeFile(tokenFile, 'rotated-2\n');
      await waitForSnapshot(source, okWith('10.0.0.1:8080', '10.0.0.2:8080'));
    } finally {
      api.setToken('secret');
      await rm(dir, { recursive: true, force: true });
    }
  });
});
