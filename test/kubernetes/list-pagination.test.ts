/**
 * Paged LISTs against the fake API server over loopback. The fake pages as kube-apiserver does
 * (`limit`, opaque `continue`, one snapshot per list, `410 Expired` for a compacted token); the
 * source lists a Service with 23 EndpointSlices 5 at a time, publishes the set only once the last
 * page is in (never a partial one), watches from the final page's resourceVersion (catching the
 * changes made while it paged), restarts from the beginning when a continue token expires, and
 * pages its re-list after a watch expiry too.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/core/errors.js';
import type { DiscoverySnapshot } from '../../src/discovery/endpoint-source.js';
import { createKubernetesEndpointSource, type KubernetesEndpointSource } from '../../src/discovery/kubernetes/index.js';
import { endpointSlice, FakeKubeApiServer, service } from '../support/fake-kube-api-server.js';
import { addresses, fastOptions, waitForSnapshot } from './source-helpers.js';

const SLICES = 23;
const PAGE = 5;
const PAGES = Math.ceil(SLICES / PAGE); // 5

let api: FakeKubeApiServer;
let counter = 0;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  api = await FakeKubeApiServer.start({ token: 'pages' });
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(async () => {
  await api.close();
});

const key = (i: number): string => `127.0.4.${i + 1}:8080`;
const keys = (n: number): string[] => Array.from({ length: n }, (_, i) => key(i)).sort();

function putSlice(namespace: string, i: number): void {
  api.applyEndpointSlice(
    endpointSlice({
      name: `web-${String(i).padStart(2, '0')}`,
      namespace,
      service: 'web',
      ports: [{ port: 8080 }],
      endpoints: [{ address: `127.0.4.${i + 1}` }],
    }),
  );
}

/** A namespace holding Service `web` and `SLICES` slices of one endpoint each. */
function setup(): string {
  const namespace = `pages${++counter}`;
  api.applyService(service({ name: 'web', namespace, ports: [{ port: 80, targetPort: 8080 }] }));
  for (let i = 0; i < SLICES; i++) putSlice(namespace, i);
  return namespace;
}

/** Follows `web.NAMESPACE:80` with pages of `PAGE`, recording every snapshot it publishes. */
function follow(namespace: string): { source: KubernetesEndpointSource; published: DiscoverySnapshot[] } {
  const source = createKubernetesEndpointSource(`k8s:///web.${namespace}:80`, fastOptions(api, { listPageSize: PAGE }));
  closers.push(() => source.close());
  const published: DiscoverySnapshot[] = [];
  source.subscribe((s) => published.push(s));
  return { source, published };
}

const sliceLists = (namespace: string) => api.requestsMatching({ verb: 'list', resource: 'endpointslices', namespace });

interface ListBody {
  readonly items: readonly { readonly metadata: { readonly name: string } }[];
  readonly metadata: {
    readonly resourceVersion: string;
    readonly continue?: string;
    readonly remainingItemCount?: number;
  };
  readonly reason?: string;
}

const names = (body: ListBody): string[] => body.items.map((i) => i.metadata.name);

async function rawList(namespace: string, query: Record<string, string>) {
  const qs = new URLSearchParams({ labelSelector: 'kubernetes.io/service-name=web', ...query });
  const res = await fetch(`${api.url}/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices?${qs}`, {
    headers: { authorization: 'Bearer pages' },
  });
  return { status: res.status, body: (await res.json()) as ListBody };
}

describe('the fake API server pages like kube-apiserver', () => {
  it('serves limit/continue from one snapshot, in a stable order, and expires compacted tokens', async () => {
    const ns = setup();
    const first = await rawList(ns, { limit: String(PAGE) });
    expect(first.status).toBe(200);
    expect(names(first.body)).toEqual(['web-00', 'web-01', 'web-02', 'web-03', 'web-04']);
    expect(first.body.metadata.remainingItemCount).toBe(SLICES - PAGE);
    const rv = first.body.metadata.resourceVersion;
    // A change after the first page is not in later pages: they come from the same snapshot.
    putSlice(ns, 30);
    const second = await rawList(ns, { limit: String(PAGE), continue: first.body.metadata.continue ?? '' });
    expect(second.body.metadata.resourceVersion).toBe(rv);
    expect(names(second.body)).toEqual(['web-05', 'web-06', 'web-07', 'web-08', 'web-09']);
    // Compaction expires the token.
    api.compactHistory();
    const expired = await rawList(ns, { limit: String(PAGE), continue: second.body.metadata.continue ?? '' });
    expect(expired.status).toBe(410);
    expect(expired.body.reason).toBe('Expired');
    const bad = await rawList(ns, { limit: String(PAGE), continue: 'not-a-token' });
    expect(bad.status).toBe(400);
    // The last page has no continue token.
    const all = await rawList(ns, { limit: '100' });
    expect(all.body.items).toHaveLength(SLICES + 1);
    expect(all.body.metadata.continue).toBeUndefined();
  });
});

describe('paged discovery', () => {
  it('lists 23 slices 5 at a time, publishes only the complete set, then follows the watch', async () => {
    const ns = setup();
    const { source, published } = follow(ns);
    await waitForSnapshot(source, (s) => s.status.state === 'ok', 10_000, 'the first set');
    expect(sliceLists(ns)).toHaveLength(PAGES);
    expect(sliceLists(ns).map((r) => r.query.limit)).toEqual(Array(PAGES).fill(String(PAGE)));
    expect(sliceLists(ns)[0]?.query.continue).toBeUndefined();
    expect(
      sliceLists(ns)
        .slice(1)
        .every((r) => (r.query.continue ?? '') !== ''),
    ).toBe(true);
    expect(source.stats().endpointSlices).toMatchObject({ lists: 1, listPages: PAGES, continueExpired: 0 });
    const ok = published.filter((s) => s.status.state === 'ok');
    expect(ok.length).toBeGreaterThan(0);
    for (const s of ok) expect(addresses(s.endpoints)).toEqual(keys(SLICES));

    // The watch starts from the list's version and keeps delivering changes.
    const watches = () => api.requestsMatching({ verb: 'watch', resource: 'endpointslices', namespace: ns });
    await api.waitFor(() => watches().length > 0, 5000, 'the watch');
    expect(watches()[0]?.query.resourceVersion).toBe(String(api.resourceVersion));
    putSlice(ns, SLICES);
    await waitForSnapshot(source, (s) => addresses(s.endpoints).length === SLICES + 1, 5000, 'the added slice');
    expect(addresses(source.snapshot().endpoints)).toEqual(keys(SLICES + 1));
    api.deleteEndpointSlice(ns, 'web-00');
    await waitForSnapshot(source, (s) => addresses(s.endpoints).length === SLICES, 5000, 'the deleted slice');
    expect(addresses(source.snapshot().endpoints)).not.toContain(key(0));
    expect(sliceLists(ns)).toHaveLength(PAGES); // No re-list was needed.
  });

  it('restarts the list from the beginning when a continue token expires, and still gets every slice', async () => {
    const ns = setup();
    api.expireContinueTokens({ next: 1 });
    const { source, published } = follow(ns);
    await waitForSnapshot(source, (s) => s.status.state === 'ok', 10_000, 'the first set');
    const lists = sliceLists(ns);
    // Page 1, page 2 refused (410), then one full LIST from the beginning (client-go's fallback).
    expect(lists.map((r) => r.statusCode)).toEqual([200, 410, 200]);
    expect(lists[1]?.query.continue).toBeDefined();
    expect(lists[2]?.query.continue).toBeUndefined();
    expect(lists[2]?.query.limit).toBeUndefined();
    expect(source.stats().endpointSlices).toMatchObject({ lists: 1, continueExpired: 1, failures: 0 });
    const ok = published.filter((s) => s.status.state === 'ok');
    for (const s of ok) expect(addresses(s.endpoints)).toEqual(keys(SLICES));
    expect(published.some((s) => s.status.state === 'degraded')).toBe(false);

    putSlice(ns, SLICES);
    await waitForSnapshot(source, (s) => addresses(s.endpoints).length === SLICES + 1, 5000, 'the added slice');
    expect(addresses(source.snapshot().endpoints)).toEqual(keys(SLICES + 1));
  });

  it('pages the re-list after a watch expiry, and the watch resumes after it', async () => {
    const ns = setup();
    const { source } = follow(ns);
    await waitForSnapshot(source, (s) => s.status.state === 'ok', 10_000, 'the first set');
    api.deleteEndpointSlice(ns, 'web-22');
    api.compactHistory();
    api.expireWatches();
    await api.waitFor(() => sliceLists(ns).length === 2 * PAGES, 5000, 'a paged re-list');
    await waitForSnapshot(source, (s) => addresses(s.endpoints).length === SLICES - 1, 5000, 'the re-listed set');
    expect(source.stats().endpointSlices).toMatchObject({ lists: 2, listPages: 2 * PAGES });
    putSlice(ns, 40);
    await waitForSnapshot(source, (s) => addresses(s.endpoints).includes('127.0.4.41:8080'), 5000, 'a later change');
  });

  it('rejects a listPageSize that is not a positive integer, naming the option', () => {
    for (const bad of [0, -5, 2.5, '10']) {
      expect(() =>
        createKubernetesEndpointSource('k8s:///web.x:80', {
          connection: api.connection(),
          listPageSize: bad as number,
        }),
      ).toThrow(
        expect.objectContaining({ code: ErrorCodes.INVALID_OPTION, message: expect.stringContaining('listPageSize') }),
      );
    }
  });
});
