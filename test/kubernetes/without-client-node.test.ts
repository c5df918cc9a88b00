/**
 * @kubernetes/client-node is an optional peer: these tests run evenlb where it cannot be
 * resolved at all. The package root and the CLI are bundled from the sources into a temporary
 * folder whose node_modules holds only the runtime dependencies (links into the repository's),
 * so an import of client-node fails there exactly as in an application that did not install it.
 * In-cluster discovery (service-account token and CA, KUBERNETES_SERVICE_HOST/PORT, a rotated
 * token) works against the fake API server over TLS; a kubeconfig reports the package to
 * install, as a degraded source and as exit code 2 from `evenlb doctor` and `evenlb proxy`.
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleFixture, type FixtureMessage, FixtureProcess } from '../server/support/fixture-process.js';
import { selfSignedCert } from '../server/support/servers.js';
import { FakeKubeApiServer, service } from '../support/fake-kube-api-server.js';
import { type IsolatedInstall, isolatedInstall, runtimeDependencies } from '../support/isolated-install.js';
import { repoRoot, runCli } from '../support/run-cli.js';
import { rotateToken, webSlice } from './source-helpers.js';

const INSTALL = 'npm install @kubernetes/client-node@1';
const SOURCE_OPTIONS = { backoffBaseMs: 20, backoffMaxMs: 200, requestTimeoutMs: 5000 };

let install: IsolatedInstall;
let dir: string;
let app: string;
/** The bundled follow-target fixture and CLI, in `app`. */
let follower: string;
let cli: string;
let api: FakeKubeApiServer;
let ca: string;
let kubeconfig: string;

/** A child environment without any Kubernetes configuration but `extra`. */
function env(extra: Record<string, string>): NodeJS.ProcessEnv {
  const { KUBECONFIG: _k, KUBERNETES_SERVICE_HOST: _h, KUBERNETES_SERVICE_PORT: _p, ...rest } = process.env;
  return { ...rest, HOME: dir, ...extra };
}

/** Starts the follow-target fixture on `k8s:///web.cfg:80` with `options` and `childEnv`. */
function follow(options: Record<string, unknown>, childEnv: NodeJS.ProcessEnv): FixtureProcess {
  const args = [follower, 'k8s:///web.cfg:80', JSON.stringify({ ...SOURCE_OPTIONS, ...options })];
  return new FixtureProcess(spawn(process.execPath, args, { env: childEnv, stdio: ['pipe', 'pipe', 'pipe'] }));
}

const snapshot =
  (state: string, ...endpoints: string[]) =>
  (m: FixtureMessage): boolean =>
    m.type === 'snapshot' && m.state === state && (endpoints.length === 0 || String(m.endpoints) === String(endpoints));

beforeAll(async () => {
  // node_modules with the package's runtime dependencies and nothing else.
  install = await isolatedInstall({ packages: runtimeDependencies() });
  dir = install.dir;
  app = join(dir, 'app');
  follower = await bundleFixture(join(repoRoot, 'test', 'kubernetes', 'fixtures', 'follow-target.ts'), app);
  cli = await bundleFixture(join(repoRoot, 'src', 'cli', 'main.ts'), app);
  const fromApp = createRequire(cli);
  expect(() => fromApp.resolve('@kubernetes/client-node')).toThrow(/Cannot find module/);
  expect(fromApp.resolve('undici')).toContain('undici');

  const tls = selfSignedCert([], ['127.0.0.1'], 'kube-apiserver');
  ca = tls.cert;
  api = await FakeKubeApiServer.start({ tls, token: 'sa-token' });
  api.applyService(service({ name: 'web', namespace: 'cfg', ports: [{ port: 80, targetPort: 8080 }] }));
  api.applyEndpointSlice(webSlice('10.0.0.1'));
  kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, api.kubeconfigYaml());
}, 60_000);

afterAll(async () => {
  await api?.close();
  await install?.remove();
});

describe('without @kubernetes/client-node', () => {
  it('follows a k8s:/// target in-cluster: service-account token and CA, KUBERNETES_SERVICE_HOST/PORT, a rotated token', async () => {
    const sa = join(dir, 'serviceaccount');
    mkdirSync(sa, { recursive: true });
    await writeFile(join(sa, 'token'), 'sa-token');
    await writeFile(join(sa, 'ca.crt'), ca);
    const child = follow(
      { serviceAccountDir: sa },
      env({ KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(api.port) }),
    );
    try {
      await child.waitForMessage(snapshot('ok', '10.0.0.1:8080'), 20_000, 'the first endpoints');
      expect(api.requests.at(-1)?.token).toBe('sa-token');

      await rotateToken(sa, api, 'sa-token-2');
      api.dropWatches();
      api.applyEndpointSlice(webSlice('10.0.0.1', '10.0.0.2'));
      await child.waitForMessage(snapshot('ok', '10.0.0.1:8080', '10.0.0.2:8080'), 20_000, 'endpoints after rotation');
      expect(api.requests.at(-1)?.token).toBe('sa-token-2');
      expect(child.stderr).toBe('');
    } finally {
      await child.stop();
      api.setToken('sa-token');
      api.applyEndpointSlice(webSlice('10.0.0.1'));
    }
  });

  it('reports a kubeconfig as degraded, naming the package to install, without a request', async () => {
    const before = api.requests.length;
    const child = follow({}, env({ KUBECONFIG: kubeconfig }));
    try {
      const degraded = await child.waitForMessage(snapshot('degraded'), 20_000, 'a degraded snapshot');
      expect(degraded.code).toBe('EVENLB_MISSING_PACKAGE');
      expect(degraded.error).toContain(`kubeconfig ${kubeconfig}`);
      expect(degraded.error).toContain(INSTALL);
      expect(api.requests.length).toBe(before);
    } finally {
      await child.stop();
    }
  });

  it('evenlb doctor with a kubeconfig exits 2 naming the package to install', async () => {
    const r = await runCli(cli, ['doctor', '--service', 'cfg/web', '--kubeconfig', kubeconfig], {
      timeoutMs: 30_000,
      env: env({}),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('@kubernetes/client-node');
    expect(r.stderr).toContain(INSTALL);
  });

  it('evenlb proxy with a k8s:/// upstream and KUBECONFIG exits 2 naming the package to install', async () => {
    const r = await runCli(cli, ['proxy', '--listen', '127.0.0.1:0', '--upstream', 'k8s:///web.cfg:80'], {
      timeoutMs: 30_000,
      env: env({ KUBECONFIG: kubeconfig }),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(INSTALL);
  });
});
