/**
 * deploy/ for the proxy, checked statically (no Docker engine or cluster here): every
 * Kubernetes object in deploy/kubernetes/ validates against the Kubernetes schemas
 * (kubernetes-models); the gateway references the ServiceAccount from deploy/rbac/; the proxy
 * configurations in the ConfigMaps pass the proxy's own validation; the Dockerfile is
 * multi-stage, runs as a non-root user and has a health check; and every metric the Grafana
 * dashboard queries is one a running proxy really exports on /metrics.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { ValidatingWebhookConfiguration } from 'kubernetes-models/admissionregistration.k8s.io/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ConfigMap, Service, ServiceAccount } from 'kubernetes-models/v1';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { parseProxyConfig } from '../../src/proxy/config/proxy-config.js';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { parseSidecarOptions } from '../../src/proxy/sidecar/sidecar-config.js';
import { type Backend, fetchText, startBackend, startProxy } from '../proxy/helpers.js';
import { freePort } from '../support/tracked-server.js';

const DEPLOY = join(import.meta.dirname, '..', '..', 'deploy');

type Manifest = { kind: string; metadata?: { name?: string; namespace?: string }; [k: string]: unknown };

function yamlFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...yamlFiles(p));
    else if (name.endsWith('.yaml') && name !== 'kustomization.yaml') out.push(p);
  }
  return out;
}

function manifests(): { file: string; object: Manifest }[] {
  const out: { file: string; object: Manifest }[] = [];
  for (const file of yamlFiles(join(DEPLOY, 'kubernetes'))) {
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]?.message}`);
      const object = doc.toJS() as Manifest | null;
      if (object !== null) out.push({ file, object });
    }
  }
  return out;
}

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  Deployment: Deployment as never,
  Service: Service as never,
  ConfigMap: ConfigMap as never,
  ServiceAccount: ServiceAccount as never,
  Role: Role as never,
  RoleBinding: RoleBinding as never,
  NetworkPolicy: NetworkPolicy as never,
  ValidatingWebhookConfiguration: ValidatingWebhookConfiguration as never,
};

describe('proxy Kubernetes manifests', () => {
  const all = manifests();

  it('has a gateway Deployment, Service and ConfigMap and a sidecar snippet', () => {
    const kinds = all.map((m) => `${m.object.kind}/${m.object.metadata?.name}`);
    expect(kinds).toEqual(
      expect.arrayContaining([
        'Deployment/evenlb-proxy',
        'Service/evenlb-proxy',
        'ConfigMap/evenlb-proxy',
        'Deployment/orders-client',
        'ConfigMap/orders-client-evenlb',
      ]),
    );
  });

  it.each(all.map((m) => [`${m.object.kind}/${m.object.metadata?.name}`, m] as const))(
    '%s validates against the Kubernetes schema',
    (_name, m) => {
      const Model = MODELS[m.object.kind];
      expect(Model, `no model for ${m.object.kind}`).toBeDefined();
      expect(() => new (Model as new (d: never) => { validate(): void })(m.object as never).validate()).not.toThrow();
    },
  );

  it('runs the gateway as the ServiceAccount defined in deploy/rbac, non-root, with probes', () => {
    const sa = parseYaml(readFileSync(join(DEPLOY, 'rbac', 'service-account.yaml'), 'utf8')) as Manifest;
    const dep = all.find((m) => m.object.kind === 'Deployment' && m.object.metadata?.name === 'evenlb-proxy')
      ?.object as unknown as {
      metadata: { namespace: string };
      spec: {
        template: {
          spec: {
            serviceAccountName: string;
            securityContext: { runAsNonRoot: boolean };
            containers: { readinessProbe?: unknown; livenessProbe?: unknown; args: string[] }[];
          };
        };
      };
    };
    expect(dep.spec.template.spec.serviceAccountName).toBe(sa.metadata?.name);
    expect(dep.metadata.namespace).toBe(sa.metadata?.namespace);
    expect(dep.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
    const c = dep.spec.template.spec.containers[0];
    expect(c?.readinessProbe).toBeDefined();
    expect(c?.livenessProbe).toBeDefined();
    expect(c?.args).toEqual(['proxy', '--config', '/etc/evenlb/proxy.yaml']);
    const kustomization = parseYaml(readFileSync(join(DEPLOY, 'kubernetes', 'gateway', 'kustomization.yaml'), 'utf8'));
    for (const r of kustomization.resources as string[]) {
      expect(() => statSync(join(DEPLOY, 'kubernetes', 'gateway', r))).not.toThrow();
    }
  });

  it('ships proxy configurations that pass the proxy validation (sidecar files: the sidecar options)', () => {
    const maps = all.filter((m) => m.object.kind === 'ConfigMap');
    expect(maps.length).toBeGreaterThanOrEqual(3);
    for (const m of maps) {
      const data = (m.object as unknown as { data: Record<string, string> }).data;
      if (data['sidecar.yaml'] !== undefined) {
        const doc = parseYaml(data['sidecar.yaml']) as { sidecar: unknown };
        expect(() => parseSidecarOptions(doc.sidecar), m.file).not.toThrow();
        continue;
      }
      const text = data['proxy.yaml'];
      expect(text, m.file).toBeDefined();
      const config = parseProxyConfig(text as string);
      expect(config.listeners.length).toBeGreaterThan(0);
    }
  });
});

describe('Dockerfile', () => {
  const text = readFileSync(join(DEPLOY, 'Dockerfile'), 'utf8');
  const lines = text.split('\n').filter((l) => !l.trimStart().startsWith('#'));

  it('is multi-stage and copies build output between stages', () => {
    const stages = lines.filter((l) => /^FROM\s/i.test(l));
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(lines.some((l) => /^COPY\s+--from=build\b/i.test(l))).toBe(true);
    expect(lines.some((l) => /npm ci --omit=dev/.test(l))).toBe(true);
  });

  it('runs the final stage as a non-root user with a health check and the CLI entry point', () => {
    const last = lines.slice(lines.map((l) => /^FROM\s/i.test(l)).lastIndexOf(true));
    const user = last.find((l) => /^USER\s/i.test(l));
    expect(user).toBeDefined();
    const who = (user as string)
      .replace(/^USER\s+/i, '')
      .split(':')[0]
      ?.trim();
    expect(who).not.toBe('root');
    expect(who).not.toBe('0');
    expect(last.some((l) => /^HEALTHCHECK\s/i.test(l))).toBe(true);
    expect(text).toMatch(/ENTRYPOINT \[.*dist\/cli\/main\.js"\]/);
    expect(text).toMatch(/\/healthz/);
  });
});

describe('Grafana dashboard', () => {
  let backend: Backend;
  let proxy: ProxyServer;
  let exported = '';

  beforeAll(async () => {
    backend = await startBackend('g1', '127.0.0.99');
    const loadPort = await freePort();
    proxy = await startProxy({
      admin: { address: '127.0.0.1:0' },
      // A load-reporting listener, so the load report and probe series exist too.
      listeners: [{ name: 'web', address: '127.0.0.1:0', loadReport: { loadPort, loadHost: '127.0.0.1', cpu: false } }],
      clusters: [{ name: 'web', target: `static:///${backend.key}` }],
    });
    // One request so per-endpoint series exist.
    await new Promise<void>((resolve, reject) =>
      http
        .get({ host: '127.0.0.1', port: proxy.listenerPort('web'), path: '/', agent: false }, (r) => {
          r.resume();
          r.on('end', resolve);
        })
        .on('error', reject),
    );
    await fetchText(loadPort, '/.well-known/evenlb/load');
    exported = (await fetchText(proxy.adminPort as number, '/metrics')).body;
  });

  afterAll(async () => {
    await proxy?.close();
    await backend?.close();
  });

  it('queries only metric names the proxy exports', () => {
    const dash = JSON.parse(readFileSync(join(DEPLOY, 'grafana', 'evenlb-proxy-dashboard.json'), 'utf8')) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    const names = new Set<string>();
    for (const p of dash.panels) {
      for (const t of p.targets) {
        for (const m of t.expr.matchAll(/\b(evenlb_[a-z_]+|process_[a-z_]+)\b/g)) names.add(m[1] as string);
      }
    }
    expect(names.size).toBeGreaterThanOrEqual(10);
    const exportedNames = new Set([...exported.matchAll(/^([a-z_:]+)(?:\{| )/gm)].map((m) => m[1] as string));
    for (const n of names) expect(exportedNames, `dashboard uses ${n}`).toContain(n);
  });
});
