/**
 * The admission-webhook example: its manifests are valid Kubernetes objects (kubernetes-models
 * schemas) that fit together (selectors, ports, webhook service reference, grace periods); the
 * webhook itself, started for real over HTTPS on loopback with a generated certificate,
 * answers AdmissionReview v1 requests correctly and recycles kube-apiserver-style keep-alive
 * connections; its entry point drains and exits on SIGTERM.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ValidatingWebhookConfiguration } from 'kubernetes-models/admissionregistration.k8s.io/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { Service, ServiceAccount } from 'kubernetes-models/v1';
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { createWebhookServer } from '../../examples/admission-webhook/src/webhook-server.js';
import { recycleConnections } from '../../src/server/index.js';
import { bundleFixture, FixtureProcess } from '../server/support/fixture-process.js';
import { listen, PerConnectionCounter, selfSignedCert, shutdown, waitFor } from '../server/support/servers.js';

const exampleDir = join(import.meta.dirname, '..', '..', 'examples', 'admission-webhook');
const SERVICE_DNS = 'evenlb-webhook.policy.svc';

function load(file: string): Record<string, unknown>[] {
  return parseAllDocuments(readFileSync(join(exampleDir, 'deploy', file), 'utf8')).map(
    (d) => d.toJSON() as Record<string, unknown>,
  );
}

function review(uid: string, labels?: Record<string, string>, kind = 'Pod') {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: '', version: 'v1', kind },
      resource: { group: '', version: 'v1', resource: 'pods' },
      operation: 'CREATE',
      namespace: 'shop',
      object: { apiVersion: 'v1', kind, metadata: { name: `pod-${uid}`, labels } },
    },
  };
}

describe('admission-webhook example: manifests', () => {
  const [deploymentJson] = load('deployment.yaml');
  const [serviceJson] = load('service.yaml');
  const [webhookJson] = load('validating-webhook-configuration.yaml');
  const deployment = new Deployment(deploymentJson as never);
  const service = new Service(serviceJson as never);
  const webhooks = new ValidatingWebhookConfiguration(webhookJson as never);

  it('each manifest validates against its Kubernetes schema', () => {
    expect(() => deployment.validate()).not.toThrow();
    expect(() => service.validate()).not.toThrow();
    expect(() => webhooks.validate()).not.toThrow();
  });

  it('a broken manifest is rejected (the check can fail)', () => {
    const broken = structuredClone(deploymentJson) as { spec: { replicas: unknown } };
    broken.spec.replicas = 'three';
    expect(() => new Deployment(broken as never).validate()).toThrow(/replicas/);
  });

  it('the pieces fit: selector, ports, webhook service reference, path, grace period', () => {
    const pod = deployment.spec!.template;
    const podLabels = pod.metadata!.labels!;
    for (const [k, v] of Object.entries(service.spec!.selector!)) expect(podLabels[k]).toBe(v);
    for (const [k, v] of Object.entries(deployment.spec!.selector.matchLabels!)) expect(podLabels[k]).toBe(v);

    const container = pod.spec!.containers[0]!;
    const servicePort = service.spec!.ports![0]!;
    expect(container.ports!.map((p) => p.name)).toContain(servicePort.targetPort);

    const hook = webhooks.webhooks![0]!;
    const ref = hook.clientConfig.service!;
    expect({ name: ref.name, namespace: ref.namespace, port: ref.port }).toEqual({
      name: service.metadata!.name,
      namespace: service.metadata!.namespace,
      port: servicePort.port,
    });
    expect(`${ref.name}.${ref.namespace}.svc`).toBe(SERVICE_DNS);
    expect(ref.path).toBe('/validate');
    expect(hook.admissionReviewVersions).toEqual(['v1']);
    expect(hook.sideEffects).toBe('None');
    // The webhook must never block its own Pods.
    const excluded = hook.namespaceSelector!.matchExpressions!.find((e) => e.operator === 'NotIn')!.values!;
    expect(excluded).toContain(deployment.metadata!.namespace);
    // The webhook's own Pods carry the label it requires.
    const env = Object.fromEntries(container.env!.map((e) => [e.name, e.value]));
    expect(podLabels[env.REQUIRED_LABEL!]).toBeTruthy();
    // SIGKILL must not come before the drain is over.
    const drainMs = Number(env.CLOSE_DELAY_MS) + Number(env.GRACE_MS);
    expect(pod.spec!.terminationGracePeriodSeconds! * 1000).toBeGreaterThan(drainMs);
    expect(container.readinessProbe!.httpGet!.path).toBe('/healthz');
  });
});

describe('admission-webhook example: fair-share shedding', () => {
  it('RBAC lets the pods list and watch their Service and EndpointSlices, and the Deployment uses it', () => {
    const [saJson, roleJson, bindingJson] = load('rbac.yaml');
    const sa = new ServiceAccount(saJson as never);
    const role = new Role(roleJson as never);
    const binding = new RoleBinding(bindingJson as never);
    for (const m of [sa, role, binding]) expect(() => m.validate()).not.toThrow();
    const [deploymentJson] = load('deployment.yaml');
    const deployment = new Deployment(deploymentJson as never);
    const [serviceJson] = load('service.yaml');
    const service = new Service(serviceJson as never);
    const pod = deployment.spec!.template.spec!;
    expect(pod.serviceAccountName).toBe(sa.metadata!.name);
    expect(binding.subjects).toContainEqual({ kind: 'ServiceAccount', name: sa.metadata!.name, namespace: 'policy' });
    expect(binding.roleRef.name).toBe(role.metadata!.name);
    const rules = role.rules!.map((r) => ({ group: r.apiGroups![0], resource: r.resources![0], verbs: r.verbs }));
    expect(rules).toContainEqual({ group: 'discovery.k8s.io', resource: 'endpointslices', verbs: ['list', 'watch'] });
    expect(rules).toContainEqual({ group: '', resource: 'services', verbs: ['list', 'watch'] });
    const env = pod.containers[0]!.env!;
    const peers = env.find((e) => e.name === 'FAIR_SHARE_PEERS')!.value!;
    expect(peers).toBe(
      `k8s:///${service.metadata!.name}.${service.metadata!.namespace}:${service.spec!.ports![0]!.name}`,
    );
    expect(env.find((e) => e.name === 'POD_IP')!.valueFrom!.fieldRef!.fieldPath).toBe('status.podIP');
  });

  it('two replicas exchange their load over HTTPS on the webhook port', async () => {
    const tls = selfSignedCert([SERVICE_DNS], ['127.0.0.1', '127.0.0.2']);
    const addresses = ['127.0.0.1', '127.0.0.2'];
    const servers = addresses.map(() =>
      createWebhookServer({ key: tls.key, cert: tls.cert, requiredLabel: 'team', recycle: {} }),
    );
    const ports: number[] = [];
    for (const [i, s] of servers.entries()) ports.push(await listen(s.server, addresses[i]));
    await Promise.all(servers.map((s) => s.recycler.close()));
    const peers = `static:///${addresses.map((a, i) => `${a}:${ports[i]}`).join(',')}`;
    // The assertion is that the exchange works over HTTPS on the webhook port, not how fast: a
    // peer's timeout and an answer's freshness are far above what a loaded machine needs (at the
    // 500 ms defaults a slow TLS handshake under load counted as a peer failure).
    const replicas = servers.map((s, i) =>
      recycleConnections(s.server, {
        fairShare: { peers, self: addresses[i], periodMs: 50, peerTimeoutMs: 10_000, peerTtlMs: 60_000 },
      }),
    );
    try {
      await waitFor(() => replicas.every((r) => (r.fairShare()?.peersAnswering ?? 0) === 1), 10_000, 'peer answers');
      expect(replicas.map((r) => r.fairShare()?.peerFailures)).toEqual([0, 0]);
    } finally {
      await Promise.all(replicas.map((r) => r.close()));
      await Promise.all(servers.map((s) => shutdown(s.server)));
    }
  });
});

describe('admission-webhook example: the webhook over HTTPS on loopback', () => {
  const tls = selfSignedCert([SERVICE_DNS], ['127.0.0.1']);
  const counter = new PerConnectionCounter();
  const { server, recycler } = createWebhookServer({
    key: tls.key,
    cert: tls.cert,
    requiredLabel: 'team',
    recycle: { maxRequestsPerConnection: 10 },
  });
  server.prependListener('request', (req) => counter.add(req.socket));
  let client: Client;

  beforeAll(async () => {
    const port = await listen(server);
    // kube-apiserver's way: dial the endpoint, verify the certificate as the Service's name.
    client = new Client(`https://127.0.0.1:${port}`, { connect: { ca: tls.cert, servername: SERVICE_DNS } });
  });
  afterAll(async () => {
    await client.close();
    await recycler.close();
    await shutdown(server);
  });

  // kube-apiserver sends Host: svc.ns.svc:port on every request. (undici derives the TLS server
  // name from Host: a request with another Host would make it open a new connection.)
  const host = `${SERVICE_DNS}:443`;

  async function post(body: unknown): Promise<{ status: number; json: unknown; text: string }> {
    const res = await client.request({
      path: '/validate',
      method: 'POST',
      headers: { 'content-type': 'application/json', host },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.body.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.statusCode, json, text };
  }

  it('allows a Pod with the label, echoing the uid', async () => {
    const r = await post(review('a1', { team: 'shop' }));
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'a1', allowed: true },
    });
  });

  it('denies a Pod without the label (or with an empty one) with a 403 status and a reason', async () => {
    for (const [uid, labels] of [
      ['d1', undefined],
      ['d2', { app: 'shop' }],
      ['d3', { team: '' }],
    ] as const) {
      const r = await post(review(uid, labels));
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ response: { uid, allowed: false, status: { code: 403 } } });
      expect((r.json as { response: { status: { message: string } } }).response.status.message).toMatch(/"team"/);
    }
  });

  it('answers 400 to a body that is not an AdmissionReview v1, 404 elsewhere, ok on /healthz', async () => {
    expect((await post('not json')).status).toBe(400);
    expect((await post({ apiVersion: 'admission.k8s.io/v1beta1', kind: 'AdmissionReview', request: {} })).status).toBe(
      400,
    );
    const health = await client.request({ path: '/healthz', method: 'GET', headers: { host } });
    expect(health.statusCode).toBe(200);
    expect(await health.body.text()).toBe('ok');
    const missing = await client.request({ path: '/mutate', method: 'POST', headers: { host }, body: '{}' });
    expect(missing.statusCode).toBe(404);
    await missing.body.text();
  });

  it('recycles the keep-alive connection: 100 reviews over one client connection → exactly 10 per connection', async () => {
    const before = counter.counts().length;
    for (let i = 0; i < 100; i++) {
      const r = await post(review(`r${i}`, i % 2 === 0 ? { team: 'x' } : undefined));
      expect((r.json as { response: { allowed: boolean } }).response.allowed).toBe(i % 2 === 0);
    }
    // Every connection so far (this test's and the earlier tests') carried exactly 10.
    const counts = counter.counts();
    expect(
      counts.slice(0, -1).every((c) => c === 10),
      String(counts),
    ).toBe(true);
    expect(counts.length - before).toBeGreaterThanOrEqual(10);
    expect(recycler.stats().closed.requests).toBe(counts.length - 1);
  });
});

describe('admission-webhook example: entry point', () => {
  let proc: FixtureProcess | undefined;
  afterAll(async () => {
    await proc?.stop();
  });

  it('starts from the environment, reviews, and on SIGTERM drains and exits 0', async () => {
    const tls = selfSignedCert([SERVICE_DNS], ['127.0.0.1']);
    const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'evenlb-webhook-'));
    try {
      writeFileSync(join(dir, 'tls.crt'), tls.cert);
      writeFileSync(join(dir, 'tls.key'), tls.key);
      const bundle = await bundleFixture(join(exampleDir, 'src', 'main.ts'));
      const { spawn } = await import('node:child_process');
      proc = new FixtureProcess(
        spawn(process.execPath, [bundle], {
          stdio: 'pipe',
          env: {
            ...process.env,
            PORT: '0',
            HOST: '127.0.0.1',
            TLS_CERT_FILE: join(dir, 'tls.crt'),
            TLS_KEY_FILE: join(dir, 'tls.key'),
            CLOSE_DELAY_MS: '0',
            GRACE_MS: '3000',
          },
        }),
      );
      const listening = (await proc.waitForMessage((m) => m.msg === 'listening', 10_000, 'listening log')) as {
        port: number;
      };
      const c = new Client(`https://127.0.0.1:${listening.port}`, {
        connect: { ca: tls.cert, servername: SERVICE_DNS },
      });
      const res = await c.request({
        path: '/validate',
        method: 'POST',
        body: JSON.stringify(review('m1', { team: 't' })),
      });
      expect(await res.body.json()).toMatchObject({ response: { uid: 'm1', allowed: true } });
      proc.child.kill('SIGTERM');
      expect(await proc.exited).toEqual({ code: 0, signal: null });
      await c.close();
      expect(proc.messages.map((m) => (m as { msg?: string }).msg)).toContain('drained');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
