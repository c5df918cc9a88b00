/**
 * The resources the fake Kubernetes API server serves and the shapes it shares between its
 * pieces: resource metadata (group, version, kind, scope), stored objects and history events,
 * recorded requests, options and injected failures; kube-apiserver's Status objects, continue
 * tokens, the URL routes of each resource and its RBAC "forbidden" message.
 */
import type { EndpointSlice, Service, Status } from '../../src/discovery/kubernetes/kube-objects.js';

/**
 * The resources the fake serves. Services and EndpointSlices have typed hooks; the others
 * (what `evenlb doctor` reads) are stored as given through `applyObject` / `deleteObject`.
 */
export type FakeResource =
  | 'services'
  | 'endpointslices'
  | 'pods'
  | 'nodes'
  | 'configmaps'
  | 'validatingwebhookconfigurations'
  | 'mutatingwebhookconfigurations';

export interface ResourceInfo {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly listKind: string;
  /** Cluster-scoped objects are stored under namespace `""` and served without one. */
  readonly clusterScoped?: boolean;
}

export const RESOURCES: Record<FakeResource, ResourceInfo> = {
  services: { group: '', version: 'v1', kind: 'Service', listKind: 'ServiceList' },
  endpointslices: {
    group: 'discovery.k8s.io',
    version: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    listKind: 'EndpointSliceList',
  },
  pods: { group: '', version: 'v1', kind: 'Pod', listKind: 'PodList' },
  nodes: { group: '', version: 'v1', kind: 'Node', listKind: 'NodeList', clusterScoped: true },
  configmaps: { group: '', version: 'v1', kind: 'ConfigMap', listKind: 'ConfigMapList' },
  validatingwebhookconfigurations: {
    group: 'admissionregistration.k8s.io',
    version: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    listKind: 'ValidatingWebhookConfigurationList',
    clusterScoped: true,
  },
  mutatingwebhookconfigurations: {
    group: 'admissionregistration.k8s.io',
    version: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    listKind: 'MutatingWebhookConfigurationList',
    clusterScoped: true,
  },
};

/** Any object of a `FakeResource`, as tests hand it to `applyObject`. */
export interface FakeObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: { name?: string; namespace?: string; [key: string]: unknown };
  readonly [key: string]: unknown;
}

/** Requests `forbid()` answers 403 (RBAC), matched on every field given. */
export interface ForbidRule {
  /** A resource, or a subresource such as `pods/proxy`. */
  readonly resource?: string;
  readonly verb?: 'get' | 'list' | 'watch';
  readonly namespace?: string;
}

export type StoredObject = (EndpointSlice | Service | FakeObject) & { metadata: { name: string; namespace?: string } };

export interface HistoryEvent {
  readonly rv: number;
  readonly resource: FakeResource;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: StoredObject;
  /** The object before a MODIFIED, to send ADDED/DELETED when it enters/leaves a selector. */
  readonly previous: StoredObject | undefined;
}

/** A request as the fake saw it, with its RBAC verb. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly verb: 'get' | 'list' | 'watch' | 'unknown';
  /** API group (`""` for the core group). */
  readonly group: string;
  /** Resource name (`services`, `endpointslices`, `pods/proxy`, ...) or `""` for unknown paths. */
  readonly resource: string;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
  readonly statusCode: number;
  /** The bearer token sent, if any. */
  readonly token: string | undefined;
}

export interface FakeKubeApiServerOptions {
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Default 0 (ephemeral). */
  readonly port?: number;
  /** Require `Authorization: Bearer <token>`; unset = no authentication. */
  readonly token?: string;
  /** Watch events kept for resumption; older versions get 410 Expired. Default 1000. */
  readonly historyLimit?: number;
  /** Send a BOOKMARK to bookmark-enabled watches this often (ms); default 0 = only via `sendBookmarks()`. */
  readonly bookmarkIntervalMs?: number;
  /**
   * Serve HTTPS with this key and certificate (PEM). `ca` (the CA that signed `cert`, or the
   * self-signed `cert` itself) is handed out by `connection()` and `kubeconfigYaml()`.
   */
  readonly tls?: { readonly key: string; readonly cert: string; readonly ca?: string };
  /**
   * Also serve Pods, Nodes, ConfigMaps, webhook configurations and the pod proxy subresource
   * (what `evenlb doctor` reads). Default false: those paths answer 404, as they always did.
   */
  readonly workloads?: boolean;
}

/** What `failRequests` makes the server answer. */
export interface InjectedFailure {
  /** How many matching requests fail. */
  readonly count: number;
  /** HTTP status, e.g. 500, 503, 429, 403. */
  readonly statusCode: number;
  /** Only requests with this verb (default all). */
  readonly verb?: 'get' | 'list' | 'watch';
  /** Only requests for this resource (default all). */
  readonly resource?: FakeResource;
  /** A `Retry-After` header (s). */
  readonly retryAfterSeconds?: number;
}

export const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  410: 'Expired',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

export function statusObject(code: number, message: string, details?: Status['details']): Status {
  return {
    apiVersion: 'v1',
    kind: 'Status',
    metadata: {},
    status: 'Failure',
    message,
    reason: REASONS[code] ?? 'Unknown',
    ...(details === undefined ? {} : { details }),
    code,
  };
}

/** kube-apiserver's message for a continue token whose snapshot was compacted. */
export const CONTINUE_EXPIRED =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list ' +
  'without the continue parameter.';

/** An opaque continue token (base64 JSON, like kube-apiserver's). */
export function encodeContinue(position: { id: number; offset: number }): string {
  return Buffer.from(JSON.stringify({ v: 'fake.k8s.io/v1', ...position })).toString('base64url');
}

export function decodeContinue(token: string): { id: number; offset: number } | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (typeof value !== 'object' || value === null) return undefined;
    const { v, id, offset } = value as Record<string, unknown>;
    if (v !== 'fake.k8s.io/v1' || !Number.isInteger(id) || !Number.isInteger(offset)) return undefined;
    return { id: id as number, offset: offset as number };
  } catch {
    return undefined;
  }
}

/** Strips `kind`/`apiVersion` as the API server does for items of a typed LIST. */
export function listItem(object: StoredObject): unknown {
  const { kind: _kind, apiVersion: _apiVersion, ...rest } = object;
  return rest;
}

/** The resource, namespace and name a request path names; undefined when the fake does not serve it. */
export function routeOf(
  pathname: string,
  workloads: boolean,
): { resource: FakeResource; namespace?: string; name?: string } | undefined {
  const patterns: [RegExp, FakeResource][] = [
    [/^\/api\/v1\/(?:namespaces\/([^/]+)\/)?services(?:\/([^/]+))?$/, 'services'],
    [/^\/apis\/discovery\.k8s\.io\/v1\/(?:namespaces\/([^/]+)\/)?endpointslices(?:\/([^/]+))?$/, 'endpointslices'],
    [/^\/api\/v1\/(?:namespaces\/([^/]+)\/)?pods(?:\/([^/]+))?$/, 'pods'],
    [/^\/api\/v1\/(?:namespaces\/([^/]+)\/)?configmaps(?:\/([^/]+))?$/, 'configmaps'],
    [/^\/api\/v1\/()?nodes(?:\/([^/]+))?$/, 'nodes'],
    [
      /^\/apis\/admissionregistration\.k8s\.io\/v1\/()?validatingwebhookconfigurations(?:\/([^/]+))?$/,
      'validatingwebhookconfigurations',
    ],
    [
      /^\/apis\/admissionregistration\.k8s\.io\/v1\/()?mutatingwebhookconfigurations(?:\/([^/]+))?$/,
      'mutatingwebhookconfigurations',
    ],
  ];
  for (const [re, resource] of patterns) {
    const m = re.exec(pathname);
    if (m === null) continue;
    if (!workloads && resource !== 'services' && resource !== 'endpointslices') continue;
    const clusterScoped = RESOURCES[resource].clusterScoped === true;
    const namespace = m[1] === undefined || clusterScoped ? undefined : decodeURIComponent(m[1]);
    const name = m[2] === undefined ? undefined : decodeURIComponent(m[2]);
    if (name !== undefined && namespace === undefined && !clusterScoped) return undefined;
    return { resource, ...(namespace === undefined ? {} : { namespace }), ...(name === undefined ? {} : { name }) };
  }
  return undefined;
}

/** kube-apiserver's RBAC message when one of the `forbid()` rules matches, else undefined. */
export function deniedMessage(
  rules: readonly ForbidRule[],
  resource: string,
  verb: string,
  namespace: string | undefined,
  name: string | undefined,
): string | undefined {
  const rule = rules.find(
    (r) =>
      (r.resource === undefined || r.resource === resource) &&
      (r.verb === undefined || r.verb === verb) &&
      (r.namespace === undefined || r.namespace === namespace),
  );
  if (rule === undefined) return undefined;
  const [base = resource, sub] = resource.split('/');
  const group = RESOURCES[base as FakeResource]?.group ?? '';
  const what = name === undefined ? resource : `${resource} "${name}"`;
  const where = namespace === undefined ? 'at the cluster scope' : `in the namespace "${namespace}"`;
  return (
    `${what}${group === '' ? '' : `.${group}`} is forbidden: User "system:serviceaccount:test:fake" cannot ${verb} ` +
    `resource "${base}"${sub === undefined ? '' : ` subresource "${sub}"`} in API group "${group}" ${where}`
  );
}
