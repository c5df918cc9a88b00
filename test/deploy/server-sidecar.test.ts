/**
 * deploy/kubernetes/server-sidecar/, checked statically and against a real sidecar. Each of the
 * three pod shapes — the native sidecar (deployment.yaml), the plain two-container form and the
 * admission webhook (webhook/, the short YAML form in a ConfigMap) — names consistent ports:
 * the Service's targetPort is the sidecar's listening port, the sidecar forwards to the app's
 * port on localhost, its probes and Prometheus annotation use its metrics port, the
 * NetworkPolicy opens the load exchange to the Service's own pods only, `--peers` is the
 * Service itself, the pod runs as the ServiceAccount its RoleBinding names, and TLS files come
 * from mounted volumes. Then a real `evenlb proxy` runs each shape's sidecar settings (with
 * loopback addresses for ports) against the fake API server, and the requests it makes — list
 * and watch, through a 410 re-list — are exactly what the Role grants: the same verbs and
 * resources, in its namespace, the Service by name, the EndpointSlices of its own Service.
 * The optional `load-report/` component (a kustomize Component, its JSON patches applied here as
 * kustomize would) adds `--load-report 64` to the native sidecar and opens the load port to
 * labelled probing clients: the patched pod passes the same checks, and its running sidecar
 * answers a load probe with the requests in flight and puts `endpoint-load-metrics` on a response.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml, stringify } from 'yaml';
import { sidecarOptionsFromFlags } from '../../src/cli/proxy-sidecar.js';
import { addSidecarOptions, type SidecarFlags } from '../../src/cli/proxy-sidecar-flags.js';
import {
  listenAddress,
  parseAppAddress,
  parseSidecarOptions,
  type SidecarOptions,
} from '../../src/proxy/sidecar/sidecar-config.js';
import { endpointSlice, FakeKubeApiServer, type RecordedRequest } from '../support/fake-kube-api-server.js';
import { buildCli, repoRoot } from '../support/run-cli.js';
import { testCertificates } from '../support/test-certificates.js';
import { freePort } from '../support/tracked-server.js';

const DIR = join(repoRoot, 'deploy', 'kubernetes', 'server-sidecar');

type Obj = {
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
} & Record<
  string,
  // biome-ignore lint/suspicious/noExplicitAny: manifests are read as parsed YAML and checked field by field
  any
>;

function load(file: string): Obj[] {
  return parseAllDocuments(readFileSync(join(DIR, file), 'utf8')).map((d) => d.toJS() as Obj);
}

interface Shape {
  readonly name: string;
  readonly objects: readonly Obj[];
}

/** `pointer` split into its reference tokens (RFC 6901). */
function tokens(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/**
 * `objects` with a kustomize Component's JSON 6902 patches applied (the `add` operations these
 * manifests use; anything else fails the test), each on the object its target names.
 */
function withComponent(objects: readonly Obj[], component: string): Obj[] {
  const out = objects.map((o) => structuredClone(o));
  const kustomization = load(`${component}/kustomization.yaml`)[0] as Obj;
  expect(kustomization.kind).toBe('Component');
  for (const { target, patch } of kustomization.patches as { target: Obj; patch: string }[]) {
    const object = out.find((o) => o.kind === target.kind && o.metadata.name === target.name);
    expect(object, `${target.kind}/${target.name}`).toBeDefined();
    for (const op of parseYaml(patch) as { op: string; path: string; value: unknown }[]) {
      expect(op.op, op.path).toBe('add');
      const path = tokens(op.path);
      const last = path.pop() as string;
      // biome-ignore lint/suspicious/noExplicitAny: walking parsed YAML by a JSON pointer
      const parent = path.reduce<any>((node, t) => node?.[t], object);
      expect(parent, `${op.path} exists`).toBeDefined();
      if (Array.isArray(parent)) parent.splice(last === '-' ? parent.length : Number(last), 0, op.value);
      else parent[last] = op.value;
    }
  }
  return out;
}

const common = [...load('rbac.yaml'), ...load('service.yaml'), ...load('network-policy.yaml')];
const SHAPES: readonly Shape[] = [
  { name: 'native sidecar (deployment.yaml)', objects: [...common, ...load('deployment.yaml')] },
  {
    name: 'two containers (deployment-two-containers.yaml)',
    objects: [...common, ...load('deployment-two-containers.yaml')],
  },
  { name: 'admission webhook (webhook/webhook.yaml)', objects: load('webhook/webhook.yaml') },
  {
    name: 'native sidecar reporting load (deployment.yaml + load-report/)',
    objects: withComponent([...common, ...load('deployment.yaml')], 'load-report'),
  },
];

const one = (objects: readonly Obj[], kind: string): Obj => {
  const found = objects.filter((o) => o.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0] as Obj;
};

/** The sidecar container of a pod template and whether it is a native sidecar. */
function sidecarContainer(deployment: Obj): { container: Obj; native: boolean; app: Obj } {
  const spec = deployment.spec.template.spec;
  const init = (spec.initContainers ?? []).find((c: Obj) => c.name === 'evenlb');
  const plain = (spec.containers ?? []).find((c: Obj) => c.name === 'evenlb');
  const container = (init ?? plain) as Obj;
  expect(container, 'an evenlb container').toBeDefined();
  const app = (spec.containers as Obj[]).find((c) => c.name !== 'evenlb') as Obj;
  return { container, native: init !== undefined, app };
}

/** The sidecar's options as the container's args say them: flags, or the file `--config` names (a mounted ConfigMap). */
function sidecarOptions(
  objects: readonly Obj[],
  deployment: Obj,
  container: Obj,
): { options: SidecarOptions; yaml?: string } {
  const args = container.args as string[];
  expect(args.slice(0, 2)).toEqual(['proxy', '--sidecar']);
  const command = addSidecarOptions(
    new Command('proxy')
      .exitOverride()
      .option('-c, --config <file>')
      .option('--listen <host:port>')
      .option('--admin <a>'),
  );
  command.parse(args.slice(1), { from: 'user' });
  const flags = command.opts<SidecarFlags>();
  if (flags.config === undefined) return { options: sidecarOptionsFromFlags(flags) };
  const mount = (container.volumeMounts as Obj[]).find((m) => m.mountPath === dirname(flags.config as string)) as Obj;
  expect(mount, `a volume mounted at ${dirname(flags.config)}`).toBeDefined();
  const volume = (deployment.spec.template.spec.volumes as Obj[]).find((v) => v.name === mount.name) as Obj;
  const map = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === volume.configMap?.name) as Obj;
  const yaml = map.data[basename(flags.config)] as string;
  return { options: parseSidecarOptions((parseYaml(yaml) as { sidecar: unknown }).sidecar), yaml };
}

const portNumber = (address: string): number => Number(address.slice(address.lastIndexOf(':') + 1));

describe('deploy/kubernetes/server-sidecar: the pod shapes name consistent ports', () => {
  for (const shape of SHAPES) {
    it(shape.name, () => {
      const deployment = one(shape.objects, 'Deployment');
      const service = one(shape.objects, 'Service');
      const ns = deployment.metadata.namespace as string;
      const { container, native, app } = sidecarContainer(deployment);
      const { options } = sidecarOptions(shape.objects, deployment, container);
      const ports = new Map((container.ports as Obj[]).map((p) => [p.name as string, p.containerPort as number]));
      // The Service's targetPort is the sidecar's listening port.
      const svcPort = (service.spec.ports as Obj[])[0] as Obj;
      expect(ports.get(svcPort.targetPort), `targetPort ${svcPort.targetPort}`).toBe(
        portNumber(listenAddress(options.listen) as string),
      );
      expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
      // --peers is this Service, by its port's name.
      expect(options.peers).toBe(`k8s:///${service.metadata.name}.${ns}:${svcPort.name}`);
      // The app on localhost, at the app container's port.
      const appAddress = parseAppAddress(options.app);
      expect(appAddress?.host).toBe('127.0.0.1');
      expect((app.ports as Obj[]).map((p) => p.containerPort)).toContain(appAddress?.port);
      // Probes, metrics and the load exchange on the sidecar's named ports.
      expect(ports.get('evenlb-metrics')).toBe(portNumber(listenAddress(options.metrics as string) as string));
      expect(ports.get('evenlb-load')).toBe(options.loadPort);
      expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'evenlb-metrics' });
      expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'evenlb-metrics' });
      expect(deployment.spec.template.metadata.annotations['prometheus.io/port']).toBe(
        String(ports.get('evenlb-metrics')),
      );
      expect(container.env).toContainEqual({ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } });
      expect(container.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
      // Native sidecar: an init container that keeps running; otherwise a plain container.
      if (native) expect(container.restartPolicy).toBe('Always');
      else expect(container.restartPolicy).toBeUndefined();
      // A drain on the way out: the app (and, in the plain form, the sidecar) wait before SIGTERM.
      expect(app.lifecycle?.preStop, 'the app waits before SIGTERM').toBeDefined();
      if (!native) expect(container.lifecycle?.preStop).toBeDefined();
      // The load exchange is open to the Service's own pods only.
      const policy = one(shape.objects, 'NetworkPolicy');
      expect(policy.spec.podSelector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
      const loadRule = (policy.spec.ingress as Obj[]).find((r) =>
        (r.ports as Obj[]).some((p) => p.port === 'evenlb-load'),
      ) as Obj;
      expect(loadRule.from).toEqual([{ podSelector: { matchLabels: deployment.spec.selector.matchLabels } }]);
      expect((policy.spec.ingress as Obj[]).flatMap((r) => (r.ports as Obj[]).map((p) => p.port))).toContain(
        svcPort.targetPort,
      );
      // The pod runs as the ServiceAccount its RoleBinding grants the Role to, in its namespace.
      const role = one(shape.objects, 'Role');
      const binding = one(shape.objects, 'RoleBinding');
      const sa = one(shape.objects, 'ServiceAccount');
      expect(deployment.spec.template.spec.serviceAccountName).toBe(sa.metadata.name);
      for (const o of [role, binding, sa, service]) expect(o.metadata.namespace, o.kind).toBe(ns);
      expect(binding.roleRef).toEqual({
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Role',
        name: role.metadata.name,
      });
      expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: sa.metadata.name, namespace: ns }]);
      const serviceRule = (role.rules as Obj[]).find((r) => (r.resources as string[]).includes('services')) as Obj;
      expect(serviceRule.resourceNames).toEqual([service.metadata.name]);
      // TLS files are in mounted volumes of the sidecar (the webhook's own certificate).
      const mounts = ((container.volumeMounts ?? []) as Obj[]).map((m) => m.mountPath as string);
      for (const f of [options.tls?.cert, options.tls?.key, options.appTls?.ca].filter((x) => x !== undefined))
        expect(
          mounts.some((m) => (f as string).startsWith(`${m}/`)),
          `${f} mounted`,
        ).toBe(true);
    });
  }

  it('the load-report component: --load-report 64, and the load port open to labelled probing clients beside the Service’s own pods', () => {
    const objects = SHAPES[3]?.objects as readonly Obj[];
    const deployment = one(objects, 'Deployment');
    const { container } = sidecarContainer(deployment);
    expect(sidecarOptions(objects, deployment, container).options.loadReport?.maxInFlight).toBe(64);
    // The plain shape stays without reports.
    const plain = one(SHAPES[0]?.objects as readonly Obj[], 'Deployment');
    expect(
      sidecarOptions(SHAPES[0]?.objects as readonly Obj[], plain, sidecarContainer(plain).container).options.loadReport,
    ).toBeUndefined();
    const loadRules = (one(objects, 'NetworkPolicy').spec.ingress as Obj[]).filter((r) =>
      (r.ports as Obj[]).some((p) => p.port === 'evenlb-load'),
    );
    expect(loadRules.map((r) => r.from)).toEqual([
      [{ podSelector: { matchLabels: deployment.spec.selector.matchLabels } }],
      [{ namespaceSelector: {}, podSelector: { matchLabels: { 'evenlb.io/load-probes': 'true' } } }],
    ]);
  });

  it('the webhook configuration calls the sidecar: Service port → targetPort → TLS listener', () => {
    const objects = load('webhook/webhook.yaml');
    const hook = one(objects, 'ValidatingWebhookConfiguration');
    const service = one(objects, 'Service');
    const ref = (hook.webhooks as Obj[])[0]?.clientConfig.service as Obj;
    expect(ref).toMatchObject({ name: service.metadata.name, namespace: service.metadata.namespace });
    const port = (service.spec.ports as Obj[]).find((p) => p.port === ref.port) as Obj;
    expect(port).toBeDefined();
    const deployment = one(objects, 'Deployment');
    const { container } = sidecarContainer(deployment);
    const { options } = sidecarOptions(objects, deployment, container);
    expect(options.tls).toBeDefined();
    expect(options.appTls?.servername).toBe(`${service.metadata.name}.${service.metadata.namespace}.svc`);
    expect(parseAppAddress(options.app)?.tls).toBe(true);
    const secret = (deployment.spec.template.spec.volumes as Obj[]).find((v) => v.secret !== undefined) as Obj;
    expect(hook.metadata.annotations?.['cert-manager.io/inject-ca-from']).toBe(
      `${service.metadata.namespace}/${secret.secret.secretName}`,
    );
  });
});

/** `group/resource:verb` a Role grants, and how it may be asked (resourceNames). */
function grants(role: Obj): Map<string, readonly string[] | undefined> {
  const out = new Map<string, readonly string[] | undefined>();
  for (const r of role.rules as Obj[]) {
    for (const list of [r.apiGroups, r.resources, r.verbs]) expect(list).not.toContain('*');
    for (const g of r.apiGroups as string[])
      for (const res of r.resources as string[])
        for (const v of r.verbs as string[]) out.set(`${g}/${res}:${v}`, r.resourceNames);
  }
  return out;
}

describe('deploy/kubernetes/server-sidecar: the Role grants exactly what a running sidecar asks', () => {
  let cli: string;
  let dir: string;
  const children: ChildProcess[] = [];
  const servers: (http.Server | https.Server)[] = [];
  beforeAll(() => {
    cli = buildCli('evenlb-deploy-sidecar-test');
    dir = mkdtempSync(join(tmpdir(), 'evenlb-deploy-sidecar-'));
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
    rmSync(dir, { recursive: true, force: true });
  });

  /** A plain app on 127.0.0.1 (HTTPS with `tls`), answering every path. */
  async function app(tls?: { cert: string; key: string }): Promise<number> {
    const handler = (_req: http.IncomingMessage, res: http.ServerResponse): void => {
      res.writeHead(200).end('ok\n');
    };
    const server = tls === undefined ? http.createServer(handler) : https.createServer(tls, handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    return (server.address() as AddressInfo).port;
  }

  for (const [index, shape] of [SHAPES[0], SHAPES[2], SHAPES[3]].entries()) {
    it(`${shape?.name}`, async () => {
      const objects = (shape as Shape).objects;
      const deployment = one(objects, 'Deployment');
      const service = one(objects, 'Service');
      const role = one(objects, 'Role');
      const ns = deployment.metadata.namespace as string;
      const name = service.metadata.name as string;
      const { container } = sidecarContainer(deployment);
      const { options, yaml } = sidecarOptions(objects, deployment, container);
      const podIp = `127.0.0.${131 + index}`;
      const [listen, metrics, admin, loadPort] = [
        await freePort(podIp),
        await freePort('127.0.0.1'),
        await freePort('127.0.0.1'),
        await freePort(podIp),
      ];

      const api = await FakeKubeApiServer.start({ token: 'sidecar' });
      try {
        api.applyService(service as never);
        const svcPort = (service.spec.ports as Obj[])[0] as Obj;
        api.applyEndpointSlice(
          endpointSlice({
            name: `${name}-x1y2z`,
            namespace: ns,
            service: name,
            ports: [{ name: svcPort.name, port: listen }],
            endpoints: [{ address: podIp, pod: `${name}-0` }],
          }),
        );
        const kubeconfig = join(dir, `kubeconfig-${index}.yaml`);
        writeFileSync(kubeconfig, api.kubeconfigYaml());
        let args: string[];
        if (yaml === undefined) {
          // The manifest's own flags, with loopback addresses for the pod's ports.
          const appPort = await app();
          const replace: Record<string, string> = {
            '--listen': `${podIp}:${listen}`,
            '--app': `127.0.0.1:${appPort}`,
            '--metrics': `127.0.0.1:${metrics}`,
            '--load-port': String(loadPort),
          };
          const given = container.args as string[];
          args = given.map((a, i) => replace[given[i - 1] as string] ?? a);
          args.push('--admin', `127.0.0.1:${admin}`);
        } else {
          // The manifest's sidecar file, with its TLS files and ports made local.
          const pki = testCertificates(`${name}.${ns}.svc`, 'deploy-webhook');
          for (const [f, text] of [
            ['tls.crt', pki.cert],
            ['tls.key', pki.key],
            ['ca.crt', pki.ca],
          ] as const)
            writeFileSync(join(dir, f), text);
          const appPort = await app({ cert: pki.cert, key: pki.key });
          const doc = parseYaml(yaml) as { sidecar: Record<string, unknown> };
          const local = {
            ...doc.sidecar,
            listen: `${podIp}:${listen}`,
            app: `https://127.0.0.1:${appPort}`,
            metrics: `127.0.0.1:${metrics}`,
            admin: `127.0.0.1:${admin}`,
            loadPort,
            tls: { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') },
            appTls: { ...(doc.sidecar.appTls as object), ca: join(dir, 'ca.crt') },
          };
          const file = join(dir, 'sidecar.yaml');
          writeFileSync(file, stringify({ sidecar: local }));
          args = ['proxy', '--sidecar', '--config', file];
        }
        expect(options.peers).toBe(`k8s:///${name}.${ns}:${svcPort.name}`);
        const child = spawn(process.execPath, [cli, ...args], {
          cwd: repoRoot,
          env: { ...process.env, KUBECONFIG: kubeconfig, POD_IP: podIp },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        children.push(child);
        let stderr = '';
        child.stderr?.setEncoding('utf8').on('data', (c: string) => {
          stderr += c;
        });
        const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
        // Listed and watching (the Service and its slices), then through a 410: re-list and watch again.
        await api.waitFor(
          () => api.openWatches({ namespace: ns }) >= 2,
          60_000,
          `the sidecar's watches; stderr: ${stderr}`,
        );
        const ready = async (): Promise<boolean> =>
          new Promise((resolve) => {
            http
              .get({ host: '127.0.0.1', port: metrics, path: '/readyz', agent: false }, (res) => {
                res.resume();
                resolve(res.statusCode === 200);
              })
              .on('error', () => resolve(false));
          });
        for (let i = 0; i < 300 && !(await ready()); i++) await new Promise((r) => setTimeout(r, 100));
        expect(await ready(), stderr).toBe(true);
        if (options.loadReport !== undefined) {
          // Reports: a response through the sidecar carries the header; a probe gets the load document.
          const get = (port: number, path: string) =>
            new Promise<{ headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
              http
                .get({ host: podIp, port, path, agent: false }, (res) => {
                  let body = '';
                  res.setEncoding('utf8').on('data', (c: string) => {
                    body += c;
                  });
                  res.on('end', () => resolve({ headers: res.headers, body }));
                })
                .on('error', reject);
            });
          const answer = await get(listen, '/');
          expect(answer.headers['endpoint-load-metrics'], 'a load report on the response').toMatch(/^TEXT /);
          const doc = JSON.parse((await get(loadPort, '/.well-known/evenlb/load')).body) as Record<string, unknown>;
          expect(doc.inFlight).toBe(0);
          expect(typeof doc.latencyMs).toBe('number');
        } else {
          const answer = await new Promise<http.IncomingHttpHeaders>((resolve, reject) => {
            http
              .get({ host: podIp, port: listen, path: '/', agent: false }, (res) => {
                res.resume();
                resolve(res.headers);
              })
              .on('error', reject);
          }).catch(() => undefined);
          // The webhook shape listens with TLS: a plain request gets no HTTP answer there.
          if (answer !== undefined) expect(answer['endpoint-load-metrics']).toBeUndefined();
        }
        api.expireWatches();
        await api.waitFor(() => api.requestsMatching({ verb: 'list', namespace: ns }).length >= 4, 30_000, 're-lists');
        await api.waitFor(() => api.openWatches({ namespace: ns }) >= 2, 30_000, 'watches again');
        child.kill('SIGTERM');
        expect(await exited, stderr).toBe(0);

        const granted = grants(role);
        const used = new Set<string>();
        for (const r of api.requests as RecordedRequest[]) {
          const key = `${r.group}/${r.resource}:${r.verb}`;
          used.add(key);
          expect(granted.has(key), `${key} is not granted (${r.path})`).toBe(true);
          expect(r.namespace, key).toBe(role.metadata.namespace);
          expect(r.statusCode, key).toBe(200);
          const names = granted.get(key);
          // resourceNames on list/watch authorize only a request for that name (its field selector).
          if (names !== undefined)
            expect(names).toContain(/^metadata\.name=(.+)$/.exec(r.query.fieldSelector ?? '')?.[1]);
          if (r.resource === 'endpointslices') expect(r.query.labelSelector).toBe(`kubernetes.io/service-name=${name}`);
        }
        expect([...used].sort()).toEqual([...granted.keys()].sort());
      } finally {
        await api.close();
      }
    }, 120_000);
  }
});
