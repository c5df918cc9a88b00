/**
 * Shared watches: sources following the same Service through the same connection share one
 * list+watch (one watch connection per resource at the API server) whatever port each
 * selects; the last `close()` closes it. Sources that would behave differently (other timing)
 * do not share.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createKubernetesEndpointSource,
  type KubernetesSourceOptions,
  KubernetesWatchCache,
} from '../../src/discovery/kubernetes/index.js';
import { endpointSlice, FakeKubeApiServer, service } from '../support/fake-kube-api-server.js';
import { fastOptions, okWith, waitForSnapshot } from './source-helpers.js';

let api: FakeKubeApiServer;
let counter = 0;

beforeAll(async () => {
  api = await FakeKubeApiServer.start();
});
afterAll(async () => {
  await api.close();
});

/** The `web-a` slice of namespace `n` (ports http 8080 and admin 9901) listing `addresses`. */
function webSlice(n: string, addresses: readonly string[]) {
  return endpointSlice({
    name: 'web-a',
    namespace: n,
    service: 'web',
    ports: [
      { name: 'http', port: 8080 },
      { name: 'admin', port: 9901 },
    ],
    endpoints: addresses.map((address) => ({ address })),
  });
}

function setup(): string {
  const n = `shared${++counter}`;
  api.applyService(
    service({
      name: 'web',
      namespace: n,
      ports: [
        { name: 'http', port: 80, targetPort: 8080 },
        { name: 'admin', port: 9000, targetPort: 9901 },
      ],
    }),
  );
  api.applyEndpointSlice(webSlice(n, ['10.0.0.1', '10.0.0.2']));
  return n;
}

const watches = (namespace: string) => ({
  slices: api.openWatches({ resource: 'endpointslices', namespace }),
  services: api.openWatches({ resource: 'services', namespace }),
});

describe('shared watch', () => {
  it('serves two sources of one Service from one watch, and closes it after the last', async () => {
    const n = setup();
    const cache = new KubernetesWatchCache();
    const options: KubernetesSourceOptions = fastOptions(api, { cache });
    const http = createKubernetesEndpointSource(`k8s:///web.${n}:80`, options);
    const admin = createKubernetesEndpointSource(`k8s:///web.${n}:admin`, options);
    await waitForSnapshot(http, okWith('10.0.0.1:8080', '10.0.0.2:8080'));
    await waitForSnapshot(admin, okWith('10.0.0.1:9901', '10.0.0.2:9901'));
    await api.waitFor(() => watches(n).slices === 1 && watches(n).services === 1, 5000, 'the watches');
    expect(cache.size).toBe(1);
    expect(api.requestsMatching({ verb: 'list', resource: 'endpointslices', namespace: n })).toHaveLength(1);
    expect(api.requestsMatching({ verb: 'watch', resource: 'endpointslices', namespace: n })).toHaveLength(1);

    // One event reaches both, each with its own port.
    api.applyEndpointSlice(webSlice(n, ['10.0.0.2', '10.0.0.3']));
    await waitForSnapshot(http, okWith('10.0.0.2:8080', '10.0.0.3:8080'));
    await waitForSnapshot(admin, okWith('10.0.0.2:9901', '10.0.0.3:9901'));

    await http.close();
    await new Promise((r) => setTimeout(r, 50));
    expect(watches(n)).toEqual({ slices: 1, services: 1 });
    expect(cache.size).toBe(1);

    await admin.close();
    expect(cache.size).toBe(0);
    await api.waitFor(() => watches(n).slices === 0 && watches(n).services === 0, 5000, 'the watches to close');

    // Closing twice is harmless; a new source opens a new watch.
    await admin.close();
    const again = createKubernetesEndpointSource(`k8s:///web.${n}:http`, options);
    await waitForSnapshot(again, okWith('10.0.0.2:8080', '10.0.0.3:8080'));
    await api.waitFor(() => watches(n).slices === 1, 5000, 'a new watch');
    await again.close();
    await api.waitFor(() => watches(n).slices === 0, 5000, 'the new watch to close');
  });

  it('shares through the process-wide cache by default, but not across different timing', async () => {
    const n = setup();
    const a = createKubernetesEndpointSource(`k8s:///web.${n}:80`, fastOptions(api));
    const b = createKubernetesEndpointSource(`k8s:///web.${n}:http`, fastOptions(api));
    const c = createKubernetesEndpointSource(`k8s:///web.${n}:http`, fastOptions(api, { backoffBaseMs: 33 }));
    try {
      for (const s of [a, b, c]) await waitForSnapshot(s, okWith('10.0.0.1:8080', '10.0.0.2:8080'));
      await api.waitFor(() => watches(n).slices === 2, 5000, 'two watches');
      await new Promise((r) => setTimeout(r, 50));
      expect(watches(n).slices).toBe(2);
    } finally {
      await Promise.all([a.close(), b.close(), c.close()]);
    }
    await api.waitFor(() => watches(n).slices === 0 && watches(n).services === 0, 5000, 'the watches to close');
  });
});
