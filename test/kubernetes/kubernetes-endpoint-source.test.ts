/**
 * `k8s:///` targets against the fake API server over real HTTP: port selection (a Service port
 * number mapped through the port's name, a port name, an unnamed port), several slices, IPv6,
 * FQDN slices skipped, condition defaults and the terminating fallback, endpoint metadata, and
 * the "Service does not exist" / "zero endpoints" distinction, both recovering by themselves.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes, isEvenlbError } from '../../src/core/errors.js';
import { createKubernetesEndpointSource, type KubernetesEndpointSource } from '../../src/discovery/kubernetes/index.js';
import { endpointSlice, FakeKubeApiServer, service } from '../support/fake-kube-api-server.js';
import { addresses, eligible, fastOptions, okWith, waitForSnapshot } from './source-helpers.js';

let api: FakeKubeApiServer;
const sources: KubernetesEndpointSource[] = [];
let counter = 0;

/** A fresh namespace per test keeps tests independent on one server. */
function ns(): string {
  return `ns${++counter}`;
}

function open(target: string, extra = {}): KubernetesEndpointSource {
  const source = createKubernetesEndpointSource(target, fastOptions(api, extra));
  sources.push(source);
  return source;
}

beforeAll(async () => {
  api = await FakeKubeApiServer.start({ token: 'test-token' });
});
afterEach(async () => {
  await Promise.all(sources.splice(0).map((s) => s.close()));
});
afterAll(async () => {
  await api.close();
});

function webhookService(namespace: string) {
  return service({
    name: 'webhook',
    namespace,
    ports: [
      { name: 'https', port: 443, targetPort: 8443 },
      { name: 'metrics', port: 9090, targetPort: 9090 },
    ],
  });
}

describe('port selection', () => {
  it('maps a Service port number through its port name to the slices port of that name', async () => {
    const n = ns();
    api.applyService(webhookService(n));
    api.applyEndpointSlice(
      endpointSlice({
        name: 'webhook-a',
        namespace: n,
        service: 'webhook',
        ports: [
          { name: 'https', port: 8443 },
          { name: 'metrics', port: 9100 },
        ],
        endpoints: [{ address: '10.0.0.1' }, { address: '10.0.0.2' }],
      }),
    );
    const byNumber = open(`k8s:///webhook.${n}:443`);
    const byName = open(`k8s:///webhook.${n}:https`);
    const metrics = open(`k8s:///webhook.${n}:9090`);
    await waitForSnapshot(byNumber, okWith('10.0.0.1:8443', '10.0.0.2:8443'));
    await waitForSnapshot(byName, okWith('10.0.0.1:8443', '10.0.0.2:8443'));
    // 9090 is the Service port; the slice says the pods listen on 9100 for "metrics".
    await waitForSnapshot(metrics, okWith('10.0.0.1:9100', '10.0.0.2:9100'));
  });

  it('follows an unnamed port (a Service with a single port) by number', async () => {
    const n = ns();
    api.applyService(service({ name: 'web', namespace: n, ports: [{ port: 80, targetPort: 8080 }] }));
    api.applyEndpointSlice(
      endpointSlice({
        name: 'web-a',
        namespace: n,
        service: 'web',
        ports: [{ port: 8080 }],
        endpoints: [{ address: '10.1.0.1' }],
      }),
    );
    expect(api.getEndpointSlice(n, 'web-a')?.ports?.[0]?.name).toBeUndefined();
    const source = open(`k8s:///web.${n}:80`);
    await waitForSnapshot(source, okWith('10.1.0.1:8080'));
  });

  it('reports a port the Service does not declare as not-found, and recovers when it is added', async () => {
    const n = ns();
    api.applyService(service({ name: 'api', namespace: n, ports: [{ name: 'http', port: 80, targetPort: 8080 }] }));
    api.applyEndpointSlice(
      endpointSlice({
        name: 'api-a',
        namespace: n,
        service: 'api',
        ports: [
          { name: 'http', port: 8080 },
          { name: 'grpc', port: 9000 },
        ],
        endpoints: [{ address: '10.2.0.1' }],
      }),
    );
    const byNumber = open(`k8s:///api.${n}:443`);
    const byName = open(`k8s:///api.${n}:grpc`);
    const s1 = await waitForSnapshot(byNumber, (s) => s.status.state === 'not-found');
    const s2 = await waitForSnapshot(byName, (s) => s.status.state === 'not-found');
    for (const s of [s1, s2]) {
      if (s.status.state !== 'not-found') throw new Error('unreachable');
      expect(s.status.error.code).toBe(ErrorCodes.SERVICE_NOT_FOUND);
      expect(s.status.error.message).toMatch(/its ports are 80 \(http\)/);
    }
    api.applyService(
      service({
        name: 'api',
        namespace: n,
        ports: [
          { name: 'http', port: 80, targetPort: 8080 },
          { name: 'grpc', port: 443, targetPort: 9000 },
        ],
      }),
    );
    await waitForSnapshot(byNumber, okWith('10.2.0.1:9000'));
    await waitForSnapshot(byName, okWith('10.2.0.1:9000'));
  });
});

describe('slices', () => {
  it('unions several slices, keeps an address listed twice once, and follows IPv6 slices', async () => {
    const n = ns();
    api.applyService(webhookService(n));
    const ports = [{ name: 'https', port: 8443 }];
    api.applyEndpointSlice(
      endpointSlice({
        name: 'webhook-a',
        namespace: n,
        service: 'webhook',
        ports,
        endpoints: [{ address: '10.0.0.1' }, { address: '10.0.0.2' }],
      }),
    );
    api.applyEndpointSlice(
      endpointSlice({
        name: 'webhook-b',
        namespace: n,
        service: 'webhook',
        ports,
        endpoints: [{ address: '10.0.0.2', ready: false }, { address: '10.0.0.3' }],
      }),
    );
    api.applyEndpointSlice(
      endpointSlice({
        name: 'webhook-v6',
        namespace: n,
        service: 'webhook',
        ports,
        endpoints: [{ address: 'fd00::1' }, { address: 'fd00::2', ready: false, serving: false }],
      }),
    );
    // A slice of another Service in the namespace is not selected.
    api.applyEndpointSlice(
      endpointSlice({ name: 'other-a', namespace: n, service: 'other', ports, endpoints: [{ address: '10.9.9.9' }] }),
    );
    const source = open(`k8s:///webhook.${n}:https`);
    const snap = await waitForSnapshot(
      source,
      okWith('10.0.0.1:8443', '10.0.0.2:8443', '10.0.0.3:8443', '[fd00::1]:8443', '[fd00::2]:8443'),
    );
    // 10.0.0.2 appears in two slices: the first slice by name (webhook-a, ready) wins.
    expect(snap.endpoints.get('10.0.0.2:8443')?.conditions.ready).toBe(true);
    expect(snap.endpoints.get('[fd00::1]:8443')?.address).toBe('fd00::1');
    expect(eligible(snap.endpoints)).toEqual(['10.0.0.1:8443', '10.0.0.2:8443', '10.0.0.3:8443', '[fd00::1]:8443']);

    api.deleteEndpointSlice(n, 'webhook-a');
    const after = await waitForSnapshot(
      source,
      okWith('10.0.0.2:8443', '10.0.0.3:8443', '[fd00::1]:8443', '[fd00::2]:8443'),
    );
    expect(after.endpoints.get('10.0.0.2:8443')?.conditions.ready).toBe(false);
  });

  it('skips FQDN slices with one warning', async () => {
    const n = ns();
    api.applyService(webhookService(n));
    const ports = [{ name: 'https', port: 8443 }];
    api.applyEndpointSlice(
      endpointSlice({
        name: 'webhook-ip',
        namespace: n,
        service: 'webhook',
        ports,
        endpoints: [{ address: '10.0.0.1' }],
      }),
    );
    api.applyEndpointSlice(
      endpointSlice({
        name: 'webhook-fqdn',
        namespace: n,
        service: 'webhook',
        addressType: 'FQDN',
        ports,
        endpoints: [{ address: 'backend.example.com' }],
      }),
    );
    const warnings: string[] = [];
    const source = open(`k8s:///webhook.${n}:https`, { onWarning: (m: string) => warnings.push(m) });
    await waitForSnapshot(source, okWith('10.0.0.1:8443'));
    // More changes, same FQDN slice: still one warning.
    api.applyEndpointSlice(
      endpointSlice({
        name: 'webhook-ip',
        namespace: n,
        service: 'webhook',
        ports,
        endpoints: [{ address: '10.0.0.1' }, { address: '10.0.0.5' }],
      }),
    );
    await waitForSnapshot(source, okWith('10.0.0.1:8443', '10.0.0.5:8443'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/webhook-fqdn: addressType FQDN is not supported/);
  });

  it('applies condition defaults, keeps zone, nodeName and targetRef, and falls back to terminating endpoints', async () => {
    const n = ns();
    api.applyService(webhookService(n));
    const ports = [{ name: 'https', port: 8443 }];
    api.applyEndpointSlice(
      endpointSlice({
        name: 'webhook-a',
        namespace: n,
        service: 'webhook',
        ports,
        endpoints: [
          // No conditions at all: ready and serving default to true, terminating to false.
          {
            address: '10.0.0.1',
            ready: null,
            serving: null,
            terminating: null,
            zone: 'zone-a',
            nodeName: 'node-1',
            pod: 'webhook-0',
          },
          { address: '10.0.0.2', ready: false },
        ],
      }),
    );
    const source = open(`k8s:///webhook.${n}:443`);
    const snap = await waitForSnapshot(source, okWith('10.0.0.1:8443', '10.0.0.2:8443'));
    const e1 = snap.endpoints.get('10.0.0.1:8443');
    expect(e1?.conditions).toEqual({ ready: true, serving: true, terminating: false });
    expect(e1?.zone).toBe('zone-a');
    expect(e1?.nodeName).toBe('node-1');
    expect(e1?.targetRef).toEqual({ kind: 'Pod', name: 'webhook-0', namespace: n, uid: 'uid-pod-webhook-0' });
    expect(eligible(snap.endpoints)).toEqual(['10.0.0.1:8443']);

    // Rolling shutdown: every pod terminating; one still serving → kube-proxy's fallback.
    api.applyEndpointSlice(
      endpointSlice({
        name: 'webhook-a',
        namespace: n,
        service: 'webhook',
        ports,
        endpoints: [
          { address: '10.0.0.1', terminating: true, serving: true },
          { address: '10.0.0.2', terminating: true, serving: false },
        ],
      }),
    );
    const term = await waitForSnapshot(
      source,
      (s) => s.status.state === 'ok' && s.endpoints.get('10.0.0.1:8443')?.conditions.terminating === true,
    );
    expect(eligible(term.endpoints)).toEqual(['10.0.0.1:8443']);
  });
});

describe('Service existence', () => {
  it('tells "Service does not exist" from "zero endpoints", and recovers from both', async () => {
    const n = ns();
    const source = open(`k8s:///late.${n}:https`);
    const missing = await waitForSnapshot(source, (s) => s.status.state === 'not-found');
    if (missing.status.state !== 'not-found') throw new Error('unreachable');
    expect(isEvenlbError(missing.status.error, ErrorCodes.SERVICE_NOT_FOUND)).toBe(true);
    expect(missing.status.error.message).toBe(`Service ${n}/late does not exist`);
    expect(missing.endpoints.size).toBe(0);

    // Created with zero endpoints: ok and empty.
    api.applyService(service({ name: 'late', namespace: n, ports: [{ name: 'https', port: 443, targetPort: 8443 }] }));
    await waitForSnapshot(source, (s) => s.status.state === 'ok' && s.endpoints.size === 0);

    api.applyEndpointSlice(
      endpointSlice({
        name: 'late-a',
        namespace: n,
        service: 'late',
        ports: [{ name: 'https', port: 8443 }],
        endpoints: [{ address: '10.3.0.1' }],
      }),
    );
    await waitForSnapshot(source, okWith('10.3.0.1:8443'));

    api.deleteService(n, 'late');
    await waitForSnapshot(source, (s) => s.status.state === 'not-found' && s.endpoints.size === 0);
  });

  it('resolves ready() with the first answer', async () => {
    const n = ns();
    const source = open(`k8s:///nothing.${n}:80`);
    await source.ready();
    expect(source.snapshot().status.state).toBe('not-found');
  });
});

describe('configuration errors', () => {
  it('rejects non-k8s targets, unknown options and inconsistent timing', () => {
    expect(() => createKubernetesEndpointSource('dns:///web.example:80')).toThrow(/not a k8s:\/\/\/ target/);
    expect(() => createKubernetesEndpointSource('k8s:///web:80')).toThrow(/NAME\.NAMESPACE/);
    expect(() => createKubernetesEndpointSource('k8s:///web.ns:80', { bogus: 1 } as never)).toThrow(
      /unknown option "bogus"/,
    );
    expect(() =>
      createKubernetesEndpointSource('k8s:///web.ns:80', {
        connection: api.connection(),
        backoffBaseMs: 100,
        backoffMaxMs: 10,
      }),
    ).toThrow(/backoffMaxMs/);
    expect(() => createKubernetesEndpointSource('k8s:///web.ns:80', { connection: { server: 'ftp://x' } })).toThrow(
      /connection\.server" must be an http\(s\) URL/,
    );
    expect(() =>
      createKubernetesEndpointSource('k8s:///web.ns:80', { env: {}, serviceAccountDir: '/nonexistent' }),
    ).toThrow(/no Kubernetes API configuration found/);
  });

  it('reports a rejected token as degraded with the HTTP status', async () => {
    const n = ns();
    const source = createKubernetesEndpointSource(`k8s:///web.${n}:80`, {
      ...fastOptions(api),
      connection: { server: api.url, token: 'wrong' },
    });
    sources.push(source);
    const s = await waitForSnapshot(source, (x) => x.status.state === 'degraded');
    if (s.status.state !== 'degraded') throw new Error('unreachable');
    expect(s.status.error.code).toBe(ErrorCodes.DISCOVERY_FAILED);
    expect(s.status.error.message).toMatch(/HTTP 401/);
    expect(addresses(s.endpoints)).toEqual([]);
  });
});
