/**
 * `evenlb doctor` as a real child process against the fake API server (through a kubeconfig
 * file), real pod metrics servers and a fake Prometheus: the readable report and `--json`,
 * `--fail-above` as an exit code, and every failure named clearly with its exit code — API
 * server or Prometheus unreachable, RBAC forbidden (a required read and the pod proxy), a
 * missing Service, bad flags and a query Prometheus rejects.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/run-doctor.js';
import { buildCli, type CliRun, runCli } from '../support/run-cli.js';
import { CAUSE_CASES } from './scenarios.js';
import { type FakeCluster, startFakeCluster } from './support/fake-cluster.js';

let cli: string;
let dir: string;
let cluster: FakeCluster | undefined;

beforeAll(() => {
  cli = buildCli('evenlb-doctor-test');
  dir = mkdtempSync(join(tmpdir(), 'evenlb-doctor-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const spec = (cause: string) => CAUSE_CASES.find((c) => c.cause === cause)!.spec;

async function start(cause: string): Promise<{ c: FakeCluster; kubeconfig: string }> {
  cluster = await startFakeCluster(spec(cause));
  const kubeconfig = join(dir, `kubeconfig-${cause}`);
  writeFileSync(kubeconfig, cluster.api.kubeconfigYaml());
  return { c: cluster, kubeconfig };
}

const doctor = (args: readonly string[]): Promise<CliRun> =>
  runCli(cli, ['doctor', '--scrape-interval', '500ms', '--timeout', '5s', ...args], { timeoutMs: 60_000 });

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe('evenlb doctor (child process)', { timeout: 120_000 }, () => {
  it('prints the pod table, the verdict with evidence and the simulated cures; --fail-above 1.3 exits 1', async () => {
    const { c, kubeconfig } = await start('kube-proxy-pinning');
    const r = await doctor(['--service', c.service, '--kubeconfig', kubeconfig, '--fail-above', '1.3']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^Service shop\/web — 4 ready pods/);
    expect(r.stdout).toMatch(/^pod\s+× mean\s+req\/s\s+conns\s+age/m);
    expect(r.stdout).toMatch(/^web-7d9f8-a-2\s+[12]\.\d\d\s+\d+\.\d\s+5\s+10h/m);
    expect(r.stdout).toContain('verdict: kube-proxy-pinning');
    expect(r.stdout).toMatch(/as it is \(simulated\)\s+\d\.\d\d/);
    expect(r.stdout).toMatch(/age recycling \(server side\)\s+\d\.\d\d\s+\d+\.\d/);
    expect(r.stdout).toContain('recommended (*)');
    expect(r.stdout).toMatch(/FAIL: max\/mean [12]\.\d\d is above 1\.3/);
  });

  it('a balanced Service passes --fail-above 1.3 with exit 0; --json carries the report', async () => {
    const { c, kubeconfig } = await start('balanced');
    const r = await doctor(['--service', c.service, '--kubeconfig', kubeconfig, '--fail-above', '1.3', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as DoctorReport;
    expect(report.diagnosis.cause).toBe('balanced');
    expect(report.failed).toBe(false);
    expect(report.figures.maxOverMean).toBeLessThan(1.1);
    expect(report.prescription).toBeNull();
    expect(report.pods).toHaveLength(4);
  });

  it('API server unreachable: exit 1 naming the API server', async () => {
    const port = await closedPort();
    const kubeconfig = join(dir, 'kubeconfig-closed');
    writeFileSync(
      kubeconfig,
      `apiVersion: v1\nkind: Config\ncurrent-context: x\nclusters: [{name: x, cluster: {server: "http://127.0.0.1:${port}"}}]\nusers: [{name: x, user: {}}]\ncontexts: [{name: x, context: {cluster: x, user: x}}]\n`,
    );
    const r = await doctor(['--service', 'shop/web', '--kubeconfig', kubeconfig]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`cannot reach the Kubernetes API server (API server http://127.0.0.1:${port}`);
    expect(r.stderr).toContain('ECONNREFUSED');
  });

  it('Prometheus unreachable: exit 1 naming its URL; a query it rejects: exit 2 naming the query', async () => {
    const { c, kubeconfig } = await start('kube-proxy-pinning');
    const port = await closedPort();
    // Two independent runs against the same cluster: started together.
    const [unreachable, rejected] = await Promise.all([
      doctor(['--service', c.service, '--kubeconfig', kubeconfig, '--prometheus', `http://127.0.0.1:${port}`]),
      doctor([
        ...['--service', c.service, '--kubeconfig', kubeconfig, '--prometheus', c.prometheusUrl],
        ...['--query', 'syntax error here'],
      ]),
    ]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain(`cannot reach Prometheus at http://127.0.0.1:${port}: ECONNREFUSED`);
    expect(rejected.code).toBe(2);
    expect(rejected.stderr).toContain(`Prometheus at ${c.prometheusUrl} rejected the query syntax error here`);
  });

  it('RBAC forbidden: exit 1 naming the resource and the role to grant (a required read, then the pod proxy)', async () => {
    const { c, kubeconfig } = await start('kube-proxy-pinning');
    c.api.forbid({ resource: 'pods', verb: 'list' });
    let r = await doctor(['--service', c.service, '--kubeconfig', kubeconfig]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('forbidden to read Pods of shop/web');
    expect(r.stderr).toContain('cannot list resource "pods" in API group "" in the namespace "shop"');
    expect(r.stderr).toContain('deploy/rbac/doctor.yaml');
    c.api.allowAll();
    c.api.forbid({ resource: 'pods/proxy' });
    r = await doctor(['--service', c.service, '--kubeconfig', kubeconfig]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot scrape pod shop\/web-7d9f8-a-\d port 9090 path \/metrics .*HTTP 403/);
    expect(r.stderr).toContain('Grant get on pods/proxy');
  });

  it('Service missing: exit 2 naming it', async () => {
    const { kubeconfig } = await start('balanced');
    const r = await doctor(['--service', 'shop/nope', '--kubeconfig', kubeconfig]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('Service shop/nope not found');
  });

  it('usage errors exit 2 naming the flag or field', async () => {
    // Four processes that each exit at once: started together.
    const [service, failAbove, none, proxyMode] = await Promise.all([
      doctor(['--service', 'not-a-service']),
      doctor(['--service', 'a/b', '--fail-above', 'high']),
      doctor([]),
      doctor(['--service', 'a/b', '--proxy-mode', 'userspace']),
    ]);
    expect(service.code).toBe(2);
    expect(service.stderr).toContain('option "service" must be a Service as "namespace/name"');
    expect(failAbove.code).toBe(2);
    expect(failAbove.stderr).toContain("option '--fail-above <ratio>' argument 'high' is invalid");
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("required option '--service <ns/name>' not specified");
    expect(proxyMode.code).toBe(2);
  });
});
