/**
 * The fake API server's own wire protocol, checked with plain HTTP requests so other tests
 * (and the demo) can rely on it: LIST shape, GET and the 404 Status, selectors, WATCH from a
 * resourceVersion with replay, synthetic ADDED without one, ADDED/DELETED as objects enter or
 * leave a selector, bookmarks, 410 Expired for a compacted version, `timeoutSeconds`, the
 * token check, and the failure hooks.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointSlice, FakeKubeApiServer, parseLabelSelector, service } from '../support/fake-kube-api-server.js';

let api: FakeKubeApiServer;
const AUTH = { authorization: 'Bearer t0k' };
const SLICES = '/apis/discovery.k8s.io/v1/namespaces/proto/endpointslices';

/** The loose shape of what comes back on the wire (asserted field by field below). */
interface Wire {
  kind?: string;
  type?: string;
  metadata: { name: string; resourceVersion?: string; uid?: string };
  object: Wire;
  items: Wire[];
  [key: string]: unknown;
}

beforeAll(async () => {
  api = await FakeKubeApiServer.start({ token: 't0k', historyLimit: 5 });
});
afterAll(async () => {
  await api.close();
});

async function getJson(path: string, headers: Record<string, string> = AUTH): Promise<{ status: number; body: Wire }> {
  const res = await request(`${api.url}${path}`, { headers });
  return { status: res.statusCode, body: (await res.body.json()) as Wire };
}

/** Opens a watch and collects its events until `count` arrived or the stream ended. */
async function watchEvents(path: string, count: number, timeoutMs = 3000): Promise<Wire[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const res = await request(`${api.url}${path}`, { headers: AUTH, signal: controller.signal });
  expect(res.statusCode).toBe(200);
  const events: Wire[] = [];
  let rest = '';
  try {
    for await (const chunk of res.body) {
      rest += chunk.toString();
      const lines = rest.split('\n');
      rest = lines.pop() ?? '';
      for (const l of lines) if (l !== '') events.push(JSON.parse(l));
      if (events.length >= count) break;
    }
  } catch {
    // aborted
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return events;
}

function slice(name: string, addresses: string[], service = 'web') {
  return endpointSlice({
    name,
    namespace: 'proto',
    service,
    ports: [{ name: 'http', port: 8080 }],
    endpoints: addresses.map((address) => ({ address })),
  });
}

describe('FakeKubeApiServer', () => {
  it('answers LIST with a typed list and the current resourceVersion; GET and a 404 Status', async () => {
    const stored = api.applyEndpointSlice(slice('web-a', ['10.0.0.1']));
    api.applyEndpointSlice(slice('other-a', ['10.0.0.9'], 'other'));
    api.applyService(
      service({ name: 'web', namespace: 'proto', ports: [{ name: 'http', port: 80, targetPort: 8080 }] }),
    );
    const list = await getJson(`${SLICES}?labelSelector=kubernetes.io%2Fservice-name%3Dweb`);
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({
      kind: 'EndpointSliceList',
      apiVersion: 'discovery.k8s.io/v1',
      metadata: { resourceVersion: String(api.resourceVersion) },
    });
    expect(list.body.items).toHaveLength(1);
    expect(list.body.items[0]?.kind).toBeUndefined(); // as the real API server does for typed lists
    expect(list.body.items[0]?.metadata).toMatchObject({
      name: 'web-a',
      resourceVersion: stored.metadata.resourceVersion,
    });
    expect(list.body.items[0]?.metadata.uid).toMatch(/^uid-/);

    const svc = await getJson('/api/v1/namespaces/proto/services/web');
    expect(svc.body).toMatchObject({
      kind: 'Service',
      spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    });
    const missing = await getJson('/api/v1/namespaces/proto/services/nope');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({
      apiVersion: 'v1',
      kind: 'Status',
      metadata: {},
      status: 'Failure',
      message: 'services "nope" not found',
      reason: 'NotFound',
      details: { name: 'nope', kind: 'services' },
      code: 404,
    });
    const byField = await getJson('/api/v1/namespaces/proto/services?fieldSelector=metadata.name%3Dweb');
    expect(byField.body.items.map((i) => i.metadata.name)).toEqual(['web']);
    expect((await getJson(SLICES, {})).status).toBe(401);
    expect((await getJson('/api/v1/namespaces/proto/pods')).status).toBe(404);
    expect((await getJson(`${SLICES}?labelSelector=%3D%3Dbad`)).status).toBe(400);
  });

  it('parses label selectors: =, ==, !=, in, notin, exists, !exists', () => {
    const l = { app: 'web', tier: 'front' };
    expect(parseLabelSelector('app=web,tier==front')(l)).toBe(true);
    expect(parseLabelSelector('app!=web')(l)).toBe(false);
    expect(parseLabelSelector('tier in (back, front)')(l)).toBe(true);
    expect(parseLabelSelector('tier notin (front)')(l)).toBe(false);
    expect(parseLabelSelector('app,!zone')(l)).toBe(true);
    expect(parseLabelSelector('zone')(l)).toBe(false);
  });

  it('watches from a resourceVersion (replay), without one (synthetic ADDED), with selector transitions', async () => {
    api.compactHistory();
    const from = api.resourceVersion;
    api.applyEndpointSlice(slice('web-b', ['10.0.0.2']));
    api.applyEndpointSlice(slice('web-b', ['10.0.0.2', '10.0.0.3']));
    const selector = 'labelSelector=kubernetes.io%2Fservice-name%3Dweb';
    const replay = await watchEvents(`${SLICES}?watch=1&resourceVersion=${from}&${selector}`, 2);
    expect(replay.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(['ADDED web-b', 'MODIFIED web-b']);
    expect(replay[0]?.object.kind).toBe('EndpointSlice');

    const synthetic = await watchEvents(`${SLICES}?watch=true&${selector}`, 2);
    expect(synthetic.map((e) => `${e.type} ${e.object.metadata.name}`).sort()).toEqual(['ADDED web-a', 'ADDED web-b']);

    // An object leaving the selector is DELETED for the watcher; entering it, ADDED.
    const at = api.resourceVersion;
    api.applyEndpointSlice(slice('web-b', ['10.0.0.2'], 'moved'));
    api.applyEndpointSlice(slice('web-b', ['10.0.0.2'], 'web'));
    const moves = await watchEvents(`${SLICES}?watch=1&resourceVersion=${at}&${selector}`, 2);
    expect(moves.map((e) => e.type)).toEqual(['DELETED', 'ADDED']);
  });

  it('answers a compacted resourceVersion with ERROR 410 Expired, and keeps a bounded history', async () => {
    const old = api.resourceVersion;
    for (let i = 0; i < 6; i++) api.applyEndpointSlice(slice('web-c', [`10.0.1.${i}`])); // > historyLimit
    const events = await watchEvents(`${SLICES}?watch=1&resourceVersion=${old}`, 1);
    expect(events).toEqual([
      {
        type: 'ERROR',
        object: expect.objectContaining({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          reason: 'Expired',
          code: 410,
        }),
      },
    ]);
  });

  it('sends bookmarks to watches that ask, ends at timeoutSeconds, and runs the failure hooks', async () => {
    const path = `${SLICES}?watch=1&resourceVersion=${api.resourceVersion}&allowWatchBookmarks=true&timeoutSeconds=1`;
    const started = Date.now();
    const pending = watchEvents(path, 10, 5000);
    await api.waitFor(() => api.openWatches({ resource: 'endpointslices', namespace: 'proto' }) === 1);
    api.sendBookmarks();
    const events = await pending; // ends by itself after ~1 s
    expect(events).toEqual([
      {
        type: 'BOOKMARK',
        object: {
          kind: 'EndpointSlice',
          apiVersion: 'discovery.k8s.io/v1',
          metadata: { resourceVersion: String(api.resourceVersion) },
        },
      },
    ]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);

    // Injected failures with Retry-After, then normal service.
    api.failRequests({ count: 1, statusCode: 429, verb: 'list', retryAfterSeconds: 2 });
    const res = await request(`${api.url}${SLICES}`, { headers: AUTH });
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBe('2');
    await res.body.dump();
    expect((await getJson(SLICES)).status).toBe(200);

    // down(): refused; up(): same port, same objects.
    const port = api.port;
    await api.down();
    await expect(request(`${api.url}${SLICES}`, { headers: AUTH })).rejects.toThrow();
    api.applyEndpointSlice(slice('web-d', ['10.0.0.4'])); // changed while down
    await api.up();
    expect(api.port).toBe(port);
    const list = await getJson(SLICES);
    expect(list.body.items.map((i) => i.metadata.name)).toContain('web-d');
    expect(api.requestsMatching({ verb: 'list', resource: 'endpointslices' }).length).toBeGreaterThan(3);
  });
});
