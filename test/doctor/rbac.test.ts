/**
 * deploy/rbac/doctor.yaml: every object valid against the Kubernetes schemas (kubernetes-models),
 * bindings pointing at the roles and the ServiceAccount defined there, no wildcards — and the
 * rules grant exactly what `evenlb doctor` requests, recorded at the fake API server during a
 * full run (pod proxy scrapes, webhook configurations, kube-proxy's ConfigMap).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ServiceAccount } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { systemClock } from '../../src/core/clock.js';
import { parseDoctorOptions } from '../../src/doctor/doctor-options.js';
import { runDoctor } from '../../src/doctor/run-doctor.js';
import { CAUSE_CASES } from './scenarios.js';
import { startFakeCluster } from './support/fake-cluster.js';

type Manifest = { kind: string; metadata: { name: string; namespace?: string }; [k: string]: unknown };
interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
}

const FILE = join(import.meta.dirname, '..', '..', 'deploy', 'rbac', 'doctor.yaml');
const manifests = parseAllDocuments(readFileSync(FILE, 'utf8')).map((d) => d.toJS() as Manifest);

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  ServiceAccount: ServiceAccount as never,
  Role: Role as never,
  ClusterRole: ClusterRole as never,
  RoleBinding: RoleBinding as never,
  ClusterRoleBinding: ClusterRoleBinding as never,
};

/** `group/resource:verb` for every rule of every role. */
function grants(): string[] {
  const out = new Set<string>();
  for (const m of manifests.filter((x) => x.kind === 'ClusterRole' || x.kind === 'Role')) {
    for (const r of m.rules as Rule[]) {
      for (const list of [r.apiGroups ?? [], r.resources ?? [], r.verbs]) expect(list).not.toContain('*');
      for (const g of r.apiGroups ?? [])
        for (const res of r.resources ?? []) for (const v of r.verbs) out.add(`${g}/${res}:${v}`);
    }
  }
  return [...out].sort();
}

describe('deploy/rbac/doctor.yaml', () => {
  it('holds valid Kubernetes objects whose bindings name its roles and ServiceAccount', () => {
    expect(manifests.map((m) => m.kind)).toEqual([
      'ServiceAccount',
      'ClusterRole',
      'ClusterRoleBinding',
      'Role',
      'RoleBinding',
    ]);
    for (const m of manifests) expect(() => new MODELS[m.kind]!(m as never).validate(), m.kind).not.toThrow();
    const sa = manifests.find((m) => m.kind === 'ServiceAccount')!;
    for (const b of manifests.filter((m) => m.kind.endsWith('Binding'))) {
      const roleKind = b.kind === 'RoleBinding' ? 'Role' : 'ClusterRole';
      const role = manifests.find((m) => m.kind === roleKind)!;
      expect(b.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name: role.metadata.name });
      expect(b.subjects).toEqual([
        { kind: 'ServiceAccount', name: sa.metadata.name, namespace: sa.metadata.namespace },
      ]);
    }
    const kubeSystem = manifests.find((m) => m.kind === 'Role')!;
    expect(kubeSystem.metadata.namespace).toBe('kube-system');
    expect((kubeSystem.rules as Rule[])[0]?.resourceNames).toEqual(['kube-proxy']);
  });

  it('grants exactly what a doctor run requests at the API server', async () => {
    const spec = CAUSE_CASES.find((c) => c.cause === 'kube-proxy-pinning')!.spec;
    const cluster = await startFakeCluster(spec);
    try {
      await runDoctor(parseDoctorOptions({ service: cluster.service, scrapeIntervalMs: 200 }), {
        clock: systemClock,
        nowMs: Date.now,
        connection: cluster.api.connection(),
        env: {},
      });
      const used = [...new Set(cluster.api.requests.map((r) => `${r.group}/${r.resource}:${r.verb}`))].sort();
      expect(used).toEqual(grants());
      expect(cluster.api.requests.every((r) => r.method === 'GET' && r.statusCode === 200)).toBe(true);
    } finally {
      await cluster.close();
    }
  });
});
