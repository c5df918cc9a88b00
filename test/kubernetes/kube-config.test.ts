/**
 * Reaching the API server the three ways a deployment does, over real TLS: in-cluster (the
 * service-account token and CA under a directory, `KUBERNETES_SERVICE_HOST/PORT`), a
 * kubeconfig from `KUBECONFIG` (current context or a chosen one) and an explicit kubeconfig
 * path. A certificate the CA does not vouch for, a rejected token and an unknown context are
 * reported as degraded with a message naming the cause.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import {
  createKubernetesEndpointSource,
  type KubernetesEndpointSource,
  type KubernetesSourceOptions,
} from '../../src/discovery/kubernetes/index.js';
import { selfSignedCert } from '../server/support/servers.js';
import { FakeKubeApiServer, service } from '../support/fake-kube-api-server.js';
import { okWith, rotateToken, waitForSnapshot, webSlice } from './source-helpers.js';

let dir: string;
let api: FakeKubeApiServer;
let ca: string;
let otherCa: string;

/** A self-signed certificate for IP 127.0.0.1 (it is its own CA), and its key. */
const selfSigned = (name: string) => selfSignedCert([], ['127.0.0.1'], name);

/** The first kubeconfig load imports @kubernetes/client-node: allow for a slow machine. */
const LOAD_MS = 15_000;
const FAST: KubernetesSourceOptions = { backoffBaseMs: 20, backoffMaxMs: 200, requestTimeoutMs: 5000 };

async function follow(options: KubernetesSourceOptions): Promise<KubernetesEndpointSource> {
  return createKubernetesEndpointSource('k8s:///web.cfg:80', { ...FAST, ...options });
}

/**
 * A source configured in-cluster: service-account directory `name` (token `sa-token`, CA
 * `caPem`) and KUBERNETES_SERVICE_HOST/PORT pointing at the fake API server.
 */
async function followInCluster(name: string, caPem: string): Promise<{ sa: string; source: KubernetesEndpointSource }> {
  const sa = join(dir, name);
  execFileSync('mkdir', ['-p', sa]);
  await writeFile(join(sa, 'token'), 'sa-token');
  await writeFile(join(sa, 'ca.crt'), caPem);
  const env = { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(api.port) };
  return { sa, source: await follow({ serviceAccountDir: sa, env }) };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'evenlb-kubecfg-'));
  const tls = selfSigned('kube-apiserver');
  ca = tls.cert;
  otherCa = selfSigned('someone-else').cert;
  api = await FakeKubeApiServer.start({ tls, token: 'sa-token' });
  api.applyService(service({ name: 'web', namespace: 'cfg', ports: [{ port: 80, targetPort: 8080 }] }));
  api.applyEndpointSlice(webSlice('10.0.0.1'));
});
afterAll(async () => {
  await api.close();
  await rm(dir, { recursive: true, force: true });
});

describe('in-cluster', () => {
  it('uses the service-account token and CA with KUBERNETES_SERVICE_HOST/PORT, re-reading a rotated token', async () => {
    const { sa, source } = await followInCluster('serviceaccount', ca);
    try {
      expect(source.connection).toBe(`in-cluster API server https://127.0.0.1:${api.port}`);
      await waitForSnapshot(source, okWith('10.0.0.1:8080'));
      expect(api.requests.at(-1)?.token).toBe('sa-token');

      await rotateToken(sa, api, 'sa-token-2');
      api.dropWatches();
      api.applyEndpointSlice(webSlice('10.0.0.1', '10.0.0.2'));
      await waitForSnapshot(source, okWith('10.0.0.1:8080', '10.0.0.2:8080'));
      expect(api.requests.at(-1)?.token).toBe('sa-token-2');
    } finally {
      await source.close();
      api.setToken('sa-token');
    }
  });

  it('refuses a server certificate the CA does not vouch for', async () => {
    const { source } = await followInCluster('serviceaccount-wrong-ca', otherCa);
    try {
      const s = await waitForSnapshot(source, (x) => x.status.state === 'degraded');
      if (s.status.state !== 'degraded') throw new Error('unreachable');
      expect(s.status.error.message).toMatch(/cannot reach in-cluster API server .*certificate/i);
    } finally {
      await source.close();
    }
  });
});

describe('explicit connection', () => {
  it('verifies with the given CA, skips verification only when told to, and refuses otherwise', async () => {
    const server = api.url;
    const withCa = await follow({ connection: { server, token: 'sa-token', ca } });
    const insecure = await follow({ connection: { server, token: 'sa-token', insecureSkipTlsVerify: true } });
    const unverified = await follow({ connection: { server, token: 'sa-token' } });
    try {
      await waitForSnapshot(withCa, (s) => s.status.state === 'ok' && s.endpoints.size > 0);
      await waitForSnapshot(insecure, (s) => s.status.state === 'ok' && s.endpoints.size > 0);
      const refused = await waitForSnapshot(unverified, (s) => s.status.state === 'degraded');
      expect(refused.status.state === 'degraded' && refused.status.error.message).toMatch(/certificate/i);
    } finally {
      await Promise.all([withCa.close(), insecure.close(), unverified.close()]);
    }
  });
});

describe('kubeconfig', () => {
  let kubeconfig: string;

  beforeAll(async () => {
    api.applyEndpointSlice(webSlice('10.0.0.3'));
    kubeconfig = join(dir, 'config');
    await writeFile(
      kubeconfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': 'good',
        clusters: [
          {
            name: 'fake',
            cluster: { server: api.url, 'certificate-authority-data': Buffer.from(ca).toString('base64') },
          },
        ],
        users: [
          { name: 'alice', user: { token: 'sa-token' } },
          { name: 'mallory', user: { token: 'nope' } },
        ],
        contexts: [
          { name: 'good', context: { cluster: 'fake', user: 'alice' } },
          { name: 'bad', context: { cluster: 'fake', user: 'mallory' } },
        ],
      }),
    );
  });

  it('reads KUBECONFIG (current context) and an explicit path with a chosen context', async () => {
    const fromEnv = await follow({ env: { KUBECONFIG: kubeconfig } });
    const explicit = await follow({ kubeconfig, context: 'good', env: {} });
    const bad = await follow({ kubeconfig, context: 'bad', env: {} });
    const unknown = await follow({ kubeconfig, context: 'nope', env: {} });
    try {
      expect(fromEnv.connection).toBe(`kubeconfig ${kubeconfig}`);
      await waitForSnapshot(fromEnv, okWith('10.0.0.3:8080'), LOAD_MS);
      await waitForSnapshot(explicit, okWith('10.0.0.3:8080'), LOAD_MS);
      const denied = await waitForSnapshot(bad, (s) => s.status.state === 'degraded', LOAD_MS);
      expect(denied.status.state === 'degraded' && denied.status.error.message).toMatch(/HTTP 401/);
      const missing = await waitForSnapshot(unknown, (s) => s.status.state === 'degraded', LOAD_MS);
      expect(missing.status.state === 'degraded' && missing.status.error.message).toMatch(
        /kubeconfig .*: cannot load: context "nope" is not defined/,
      );
    } finally {
      await Promise.all([fromEnv.close(), explicit.close(), bad.close(), unknown.close()]);
    }
  });

  it('accepts a plain-HTTP server (kubectl proxy) without insecure-skip-tls-verify', async () => {
    const plain = await FakeKubeApiServer.start({ token: 'proxy-token' });
    plain.applyService(service({ name: 'web', namespace: 'cfg', ports: [{ port: 80, targetPort: 8080 }] }));
    plain.applyEndpointSlice(webSlice('10.0.0.4'));
    const file = join(dir, 'plain-config');
    await writeFile(file, plain.kubeconfigYaml());
    const source = await follow({ kubeconfig: file, env: {} });
    try {
      await waitForSnapshot(source, okWith('10.0.0.4:8080'), LOAD_MS);
      expect(plain.requests.at(-1)?.token).toBe('proxy-token');
    } finally {
      await source.close();
      await plain.close();
    }
  });

  it('uses ~/.kube/config when nothing else is configured', async () => {
    const home = join(dir, 'home');
    execFileSync('mkdir', ['-p', join(home, '.kube')]);
    await writeFile(join(home, '.kube', 'config'), await readFile(kubeconfig));
    const source = await follow({ env: { HOME: home } });
    try {
      expect(source.connection).toBe(`kubeconfig ${join(home, '.kube', 'config')}`);
      await waitForSnapshot(source, okWith('10.0.0.3:8080'), LOAD_MS);
    } finally {
      await source.close();
    }
  });
});
