/**
 * deploy/rbac/: every object is built with kubernetes-models' classes from the parsed YAML and
 * validated against the Kubernetes schema; the bindings point at the ClusterRole and the
 * ServiceAccount that exist; and the rules grant exactly what k8s:/// discovery requests — no
 * more, no less. "What it requests" is recorded at the fake API server while a source lists,
 * watches, re-lists after a 410 and resumes, and must equal `KUBERNETES_API_ACCESS`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ServiceAccount } from 'kubernetes-models/v1';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  createKubernetesEndpointSource,
  KUBERNETES_API_ACCESS,
  KubernetesWatchCache,
} from '../../src/discovery/kubernetes/index.js';
import { okWith, waitForSnapshot } from '../kubernetes/source-helpers.js';
import { endpointSlice, FakeKubeApiServer, service } from '../support/fake-kube-api-server.js';

const RBAC_DIR = join(import.meta.dirname, '..', '..', 'deploy', 'rbac');

type Manifest = { kind: string; metadata?: { name?: string; namespace?: string }; [k: string]: unknown };

function loadManifests(): { file: string; object: Manifest }[] {
  const out: { file: string; object: Manifest }[] = [];
  // doctor*.yaml is `evenlb doctor`'s own role, checked in test/doctor/rbac.test.ts.
  const files = readdirSync(RBAC_DIR).filter(
    (f) => (f.endsWith('.yaml') || f.endsWith('.yml')) && !f.startsWith('doctor'),
  );
  for (const file of files) {
    for (const doc of parseAllDocuments(readFileSync(join(RBAC_DIR, file), 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]?.message}`);
      const object = doc.toJS() as Manifest | null;
      if (object !== null) out.push({ file, object });
    }
  }
  return out;
}

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  ServiceAccount: ServiceAccount as never,
  Role: Role as never,
  ClusterRole: ClusterRole as never,
  RoleBinding: RoleBinding as never,
  ClusterRoleBinding: ClusterRoleBinding as never,
};

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

/** `group/resource:verb` triples. */
function grants(rules: Rule[]): string[] {
  const out = new Set<string>();
  for (const r of rules) {
    for (const g of r.apiGroups ?? [])
      for (const res of r.resources ?? []) for (const v of r.verbs) out.add(`${g}/${res}:${v}`);
  }
  return [...out].sort();
}

const declared = grants(
  KUBERNETES_API_ACCESS.map((a) => ({ apiGroups: [a.apiGroup], resources: [a.resource], verbs: [...a.verbs] })),
);

describe('deploy/rbac manifests', () => {
  const manifests = loadManifests();

  it('are all valid Kubernetes objects', () => {
    expect(manifests.map((m) => m.object.kind).sort()).toEqual([
      'ClusterRole',
      'ClusterRoleBinding',
      'RoleBinding',
      'ServiceAccount',
    ]);
    for (const { file, object } of manifests) {
      const Model = MODELS[object.kind];
      if (Model === undefined) throw new Error(`${file}: unexpected kind ${object.kind}`);
      expect(() => new Model(object as never).validate(), `${file} (${object.kind})`).not.toThrow();
    }
  });

  it('schema validation catches a broken rule (the check can fail)', () => {
    const broken = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'x' } };
    expect(() =>
      new ClusterRole({ ...broken, rules: [{ apiGroups: [''], resources: ['services'] }] } as never).validate(),
    ).toThrow(/verbs/);
  });

  it('grant exactly the verbs and resources the source uses: no wildcards, names or extra verbs', () => {
    const roles = manifests.filter((m) => m.object.kind === 'ClusterRole' || m.object.kind === 'Role');
    expect(roles).toHaveLength(1);
    const rules = (roles[0]?.object.rules ?? []) as Rule[];
    for (const r of rules) {
      expect(r.resourceNames).toBeUndefined();
      expect(r.nonResourceURLs).toBeUndefined();
      for (const list of [r.apiGroups ?? [], r.resources ?? [], r.verbs]) expect(list).not.toContain('*');
    }
    expect(grants(rules)).toEqual(declared);
    expect(declared).toEqual([
      '/services:list',
      '/services:watch',
      'discovery.k8s.io/endpointslices:list',
      'discovery.k8s.io/endpointslices:watch',
    ]);
  });

  it('bind that role to the ServiceAccount defined here', () => {
    const role = manifests.find((m) => m.object.kind === 'ClusterRole')?.object;
    const sa = manifests.find((m) => m.object.kind === 'ServiceAccount')?.object;
    const bindings = manifests.filter((m) => m.object.kind.endsWith('Binding'));
    expect(bindings).toHaveLength(2);
    for (const { object } of bindings) {
      expect(object.roleRef).toEqual({
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: role?.metadata?.name,
      });
      expect(object.subjects).toEqual([
        { kind: 'ServiceAccount', name: sa?.metadata?.name, namespace: sa?.metadata?.namespace },
      ]);
    }
  });
});

describe('what discovery requests at an API server', () => {
  let api: FakeKubeApiServer;
  beforeAll(async () => {
    api = await FakeKubeApiServer.start({ token: 'rbac' });
  });
  afterAll(async () => {
    await api.close();
  });

  it('equals KUBERNETES_API_ACCESS through list, watch, 410 re-list, resume and not-found', async () => {
    api.applyService(
      service({ name: 'web', namespace: 'rbac', ports: [{ name: 'http', port: 80, targetPort: 8080 }] }),
    );
    api.applyEndpointSlice(
      endpointSlice({
        name: 'web-a',
        namespace: 'rbac',
        service: 'web',
        ports: [{ name: 'http', port: 8080 }],
        endpoints: [{ address: '10.0.0.1' }],
      }),
    );
    const options = {
      connection: api.connection(),
      backoffBaseMs: 20,
      backoffMaxMs: 100,
      cache: new KubernetesWatchCache(),
    };
    const byNumber = createKubernetesEndpointSource('k8s:///web.rbac:80', options);
    const byName = createKubernetesEndpointSource('k8s:///web.rbac:http', options);
    const missing = createKubernetesEndpointSource('k8s:///absent.rbac:80', options);
    try {
      await waitForSnapshot(byNumber, okWith('10.0.0.1:8080'));
      await waitForSnapshot(byName, okWith('10.0.0.1:8080'));
      await waitForSnapshot(missing, (s) => s.status.state === 'not-found');
      await api.waitFor(() => api.openWatches({ namespace: 'rbac' }) === 4, 5000, 'four watches');
      api.expireWatches();
      await api.waitFor(() => api.requestsMatching({ verb: 'list', namespace: 'rbac' }).length >= 8, 5000, 're-lists');
      api.endWatches();
      api.applyEndpointSlice(
        endpointSlice({
          name: 'web-a',
          namespace: 'rbac',
          service: 'web',
          ports: [{ name: 'http', port: 8080 }],
          endpoints: [{ address: '10.0.0.2' }],
        }),
      );
      await waitForSnapshot(byNumber, okWith('10.0.0.2:8080'));
    } finally {
      await Promise.all([byNumber.close(), byName.close(), missing.close()]);
    }
    const used = [...new Set(api.requests.map((r) => `${r.group}/${r.resource}:${r.verb}`))].sort();
    expect(used).toEqual(declared);
  });
});
