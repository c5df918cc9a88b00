/**
 * A fake Kubernetes API server on loopback that speaks the real wire protocol for Services
 * (`/api/v1`) and EndpointSlices (`/apis/discovery.k8s.io/v1`), for integration tests and
 * demos. It is a real HTTP (or HTTPS) server: LIST answers carry `metadata.resourceVersion`
 * and a typed `kind` (`EndpointSliceList`), WATCH streams chunked JSON lines from a
 * resourceVersion (replaying a bounded history, `ERROR` 410 `Expired` when that version was
 * compacted away), bookmarks are sent to watches that ask for them, label and field selectors
 * filter, a missing object is a 404 Status, and a bearer token can be required. A LIST with
 * `limit` is paged as kube-apiserver pages it: items in a stable (namespace/name) order, an
 * opaque `metadata.continue` token and `remainingItemCount` while more remain, every page of one
 * list served from the snapshot taken by its first page (same resourceVersion), and a continue
 * token whose snapshot was compacted (`compactHistory`, `expireContinueTokens`) answered
 * `410 Expired`.
 *
 * Tests change the world through hooks: `applyEndpointSlice` / `deleteEndpointSlice`,
 * `applyService` / `deleteService` (each bumps the global resourceVersion and notifies
 * watches), and break it with `expireWatches`, `compactHistory`, `dropWatches` (socket
 * destroy), `stallWatches` (send nothing), `endWatches`, `expireContinueTokens`, `failRequests` / `clearFailures`, `setToken`, and
 * `down()` / `up()` (stop listening and come back on the same port; objects and history are
 * kept, and may be changed while down). Every request is recorded in `requests` with its RBAC
 * verb. `endpointSlice()` and `service()` build objects of the real shape.
 *
 * With `workloads: true` it also serves Pods, Nodes, ConfigMaps and Validating/Mutating
 * webhook configurations (stored as given with `applyObject`), the pod proxy subresource
 * (`setPodProxy` forwards `/api/v1/namespaces/NS/pods/POD:PORT/proxy/...` to a real server),
 * and `forbid()` answers matching requests 403 with kube-apiserver's RBAC message.
 *
 * @example
 * const api = await FakeKubeApiServer.start({ token: 'secret' });
 * api.applyService(service({ name: 'web', namespace: 'prod', ports: [{ name: 'http', port: 80, targetPort: 8080 }] }));
 * api.applyEndpointSlice(endpointSlice({ name: 'web-abc', namespace: 'prod', service: 'web',
 *   ports: [{ name: 'http', port: 8080 }], endpoints: [{ address: '127.0.0.2', pod: 'web-0' }] }));
 * const source = createKubernetesEndpointSource('k8s:///web.prod:80', { connection: api.connection() });
 * ...
 * await api.close();
 */
import http from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import { stringify } from 'yaml';
import type {
  AddressType,
  EndpointSlice,
  EndpointSliceEndpoint,
  EndpointSlicePort,
  Service,
  ServicePort,
  Status,
} from '../../src/discovery/kubernetes/kube-objects.js';

// ---------------------------------------------------------------------------------------------
// Builders

/** One endpoint of `endpointSlice()`. Conditions: `undefined` → what the controller sets, `null` → left out. */
export interface EndpointSpec {
  /** The endpoint's address (or addresses; consumers use the first). */
  readonly address: string | readonly string[];
  /** Default `!terminating`. */
  readonly ready?: boolean | null;
  /** Default: `ready`, or true when terminating (a terminating pod still passing readiness). */
  readonly serving?: boolean | null;
  /** Default false. */
  readonly terminating?: boolean | null;
  readonly nodeName?: string;
  readonly zone?: string;
  readonly hostname?: string;
  /** Name of the Pod in `targetRef`; default derived from the address. Null: no targetRef. */
  readonly pod?: string | null;
}

export interface EndpointSliceSpec {
  readonly name: string;
  /** Default `default`. */
  readonly namespace?: string;
  /** The Service name (the `kubernetes.io/service-name` label). */
  readonly service: string;
  /** Default: IPv6 when the first address is IPv6, else IPv4. */
  readonly addressType?: AddressType;
  readonly endpoints: readonly EndpointSpec[];
  /** Default one unnamed TCP port 80. A name `""` or absent is an unnamed port. */
  readonly ports?: readonly { readonly name?: string; readonly port: number; readonly protocol?: string }[];
  /** Extra labels. */
  readonly labels?: Readonly<Record<string, string>>;
}

/**
 * An EndpointSlice as the EndpointSlice controller writes it.
 *
 * @example
 * endpointSlice({ name: 'web-1', service: 'web', ports: [{ name: 'https', port: 8443 }],
 *   endpoints: [{ address: '10.0.0.1' }, { address: '10.0.0.2', terminating: true }] })
 */
export function endpointSlice(spec: EndpointSliceSpec): EndpointSlice {
  const namespace = spec.namespace ?? 'default';
  const first = spec.endpoints[0]?.address;
  const firstAddress = typeof first === 'string' ? first : first?.[0];
  const addressType: AddressType =
    spec.addressType ?? (firstAddress !== undefined && isIP(firstAddress) === 6 ? 'IPv6' : 'IPv4');
  const endpoints: EndpointSliceEndpoint[] = spec.endpoints.map((e) => {
    const addresses = typeof e.address === 'string' ? [e.address] : [...e.address];
    const terminating = e.terminating === undefined ? false : e.terminating;
    const ready = e.ready === undefined ? !terminating : e.ready;
    const serving = e.serving === undefined ? (terminating === true ? true : ready) : e.serving;
    const conditions: { ready?: boolean; serving?: boolean; terminating?: boolean } = {};
    if (ready !== null) conditions.ready = ready;
    if (serving !== null) conditions.serving = serving;
    if (terminating !== null) conditions.terminating = terminating;
    const pod = e.pod === undefined ? `${spec.service}-${(addresses[0] ?? 'x').replace(/[^a-z0-9]+/gi, '-')}` : e.pod;
    return {
      addresses,
      conditions,
      ...(e.hostname === undefined ? {} : { hostname: e.hostname }),
      ...(e.nodeName === undefined ? {} : { nodeName: e.nodeName }),
      ...(e.zone === undefined ? {} : { zone: e.zone }),
      ...(pod === null ? {} : { targetRef: { kind: 'Pod', name: pod, namespace, uid: `uid-pod-${pod}` } }),
    };
  });
  const ports: EndpointSlicePort[] = (spec.ports ?? [{ port: 80 }]).map((p) => ({
    ...(p.name === undefined || p.name === '' ? {} : { name: p.name }),
    port: p.port,
    protocol: p.protocol ?? 'TCP',
  }));
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: spec.name,
      namespace,
      labels: {
        ...spec.labels,
        'kubernetes.io/service-name': spec.service,
        'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
      },
    },
    addressType,
    endpoints,
    ports,
  };
}

export interface ServiceSpec {
  readonly name: string;
  /** Default `default`. */
  readonly namespace?: string;
  /** Service ports; `targetPort` defaults to `port`, `protocol` to TCP. */
  readonly ports: readonly {
    readonly name?: string;
    readonly port: number;
    readonly targetPort?: number | string;
    readonly protocol?: string;
  }[];
  readonly selector?: Readonly<Record<string, string>>;
  /** Default ClusterIP. */
  readonly type?: string;
  readonly clusterIP?: string;
}

/**
 * A Service object.
 *
 * @example
 * service({ name: 'web', ports: [{ name: 'https', port: 443, targetPort: 8443 }] })
 */
export function service(spec: ServiceSpec): Service {
  const ports: ServicePort[] = spec.ports.map((p) => ({
    ...(p.name === undefined || p.name === '' ? {} : { name: p.name }),
    port: p.port,
    targetPort: p.targetPort ?? p.port,
    protocol: p.protocol ?? 'TCP',
  }));
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: spec.name, namespace: spec.namespace ?? 'default' },
    spec: {
      ports,
      selector: { ...(spec.selector ?? { app: spec.name }) },
      type: spec.type ?? 'ClusterIP',
      clusterIP: spec.clusterIP ?? '10.96.0.10',
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Selectors

type Labels = Readonly<Record<string, string>>;
type Predicate = (labels: Labels) => boolean;

class SelectorError extends Error {}

function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      terms.push(current);
      current = '';
    } else current += ch;
  }
  terms.push(current);
  return terms.map((t) => t.trim()).filter((t) => t !== '');
}

/** Parses a label selector: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`. */
export function parseLabelSelector(text: string): Predicate {
  const preds = splitTerms(text).map((term): Predicate => {
    let m = /^([\w./-]+)\s*(==|=|!=)\s*([\w./-]*)$/.exec(term);
    if (m !== null) {
      const [, key = '', op, value = ''] = m;
      return op === '!=' ? (l) => l[key] !== value : (l) => l[key] === value;
    }
    m = /^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
    if (m !== null) {
      const [, key = '', op, list = ''] = m;
      const values = new Set(list.split(',').map((v) => v.trim()));
      return op === 'in'
        ? (l) => l[key] !== undefined && values.has(l[key])
        : (l) => l[key] === undefined || !values.has(l[key]);
    }
    m = /^(!?)([\w./-]+)$/.exec(term);
    if (m !== null) {
      const [, not, key = ''] = m;
      return not === '!' ? (l) => l[key] === undefined : (l) => l[key] !== undefined;
    }
    throw new SelectorError(`unable to parse requirement: ${JSON.stringify(term)}`);
  });
  return (labels) => preds.every((p) => p(labels));
}

/** Parses a field selector over `metadata.name` and `metadata.namespace` (`=`, `==`, `!=`). */
export function parseFieldSelector(text: string): Predicate {
  const preds = splitTerms(text).map((term): Predicate => {
    const m = /^(metadata\.name|metadata\.namespace)\s*(==|=|!=)\s*([\w.-]*)$/.exec(term);
    if (m === null) throw new SelectorError(`field label not supported: ${JSON.stringify(term)}`);
    const [, field = '', op, value = ''] = m;
    return op === '!=' ? (f) => f[field] !== value : (f) => f[field] === value;
  });
  return (fields) => preds.every((p) => p(fields));
}

// ---------------------------------------------------------------------------------------------
// The server

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

interface ResourceInfo {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly listKind: string;
  /** Cluster-scoped objects are stored under namespace `""` and served without one. */
  readonly clusterScoped?: boolean;
}

const RESOURCES: Record<FakeResource, ResourceInfo> = {
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

type StoredObject = (EndpointSlice | Service | FakeObject) & { metadata: { name: string; namespace?: string } };

interface HistoryEvent {
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

interface Watcher {
  readonly resource: FakeResource;
  readonly namespace: string | undefined;
  readonly matches: (object: StoredObject) => boolean;
  readonly res: http.ServerResponse;
  readonly socket: Socket;
  readonly bookmarks: boolean;
  stalled: boolean;
  timers: NodeJS.Timeout[];
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

const REASONS: Record<number, string> = {
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

function statusObject(code: number, message: string, details?: Status['details']): Status {
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
const CONTINUE_EXPIRED =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list ' +
  'without the continue parameter.';

/** An opaque continue token (base64 JSON, like kube-apiserver's). */
function encodeContinue(position: { id: number; offset: number }): string {
  return Buffer.from(JSON.stringify({ v: 'fake.k8s.io/v1', ...position })).toString('base64url');
}

function decodeContinue(token: string): { id: number; offset: number } | undefined {
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
function listItem(object: StoredObject): unknown {
  const { kind: _kind, apiVersion: _apiVersion, ...rest } = object;
  return rest;
}

export class FakeKubeApiServer {
  readonly #options: FakeKubeApiServerOptions;
  readonly #objects = new Map<string, StoredObject>();
  readonly #history: HistoryEvent[] = [];
  readonly #watchers = new Set<Watcher>();
  readonly #sockets = new Set<Socket>();
  readonly #failures: { spec: InjectedFailure; left: number }[] = [];
  /** Every request received, in order. */
  readonly requests: RecordedRequest[] = [];
  readonly #forbidden: ForbidRule[] = [];
  /** Pod proxy targets: `namespace/pod:port` → base URL. */
  readonly #podProxies = new Map<string, string>();
  #server: http.Server | undefined;
  #port = 0;
  #rv = 1000;
  /** Watches may resume from any version >= this one. */
  #compactedRv = 1000;
  #uid = 0;
  #token: string | undefined;
  #bookmarkTimer: NodeJS.Timeout | undefined;
  #closed = false;
  /** Snapshots behind outstanding continue tokens, by id. */
  readonly #listSnapshots = new Map<number, { readonly rv: number; readonly items: readonly unknown[] }>();
  #nextSnapshotId = 1;
  /** Continue requests still to be answered 410 Expired (`expireContinueTokens({ next })`). */
  #expireNextContinues = 0;

  private constructor(options: FakeKubeApiServerOptions) {
    this.#options = options;
    this.#token = options.token;
  }

  /** Starts a server listening on `host:port` (127.0.0.1, ephemeral port by default). */
  static async start(options: FakeKubeApiServerOptions = {}): Promise<FakeKubeApiServer> {
    const api = new FakeKubeApiServer(options);
    await api.#listen(options.port ?? 0);
    if (options.bookmarkIntervalMs !== undefined && options.bookmarkIntervalMs > 0) {
      api.#bookmarkTimer = setInterval(() => api.sendBookmarks(), options.bookmarkIntervalMs);
      api.#bookmarkTimer.unref();
    }
    return api;
  }

  /** `http://127.0.0.1:PORT` (or `https://`). */
  get url(): string {
    const host = this.#options.host ?? '127.0.0.1';
    return `${this.#options.tls === undefined ? 'http' : 'https'}://${isIP(host) === 6 ? `[${host}]` : host}:${this.#port}`;
  }

  get port(): number {
    return this.#port;
  }

  /** True while listening (false between `down()` and `up()`). */
  get listening(): boolean {
    return this.#server !== undefined;
  }

  /** The current (latest) resourceVersion. */
  get resourceVersion(): number {
    return this.#rv;
  }

  /** `{ server, token, ca }`, ready for `createKubernetesEndpointSource(..., { connection })`. */
  connection(): { server: string; token?: string; ca?: string } {
    const ca = this.#options.tls?.ca;
    return {
      server: this.url,
      ...(this.#token === undefined ? {} : { token: this.#token }),
      ...(ca === undefined ? {} : { ca }),
    };
  }

  /**
   * A kubeconfig (YAML text) whose current context points at this server with its token, for
   * `KUBECONFIG` in child processes (`evenlb proxy`, the demo) or the `kubeconfig` option.
   */
  kubeconfigYaml(): string {
    const ca = this.#options.tls?.ca;
    return stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'fake',
      clusters: [
        {
          name: 'fake',
          cluster: {
            server: this.url,
            ...(ca === undefined ? {} : { 'certificate-authority-data': Buffer.from(ca).toString('base64') }),
          },
        },
      ],
      users: [{ name: 'fake', user: this.#token === undefined ? {} : { token: this.#token } }],
      contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'fake' } }],
    });
  }

  // ---- objects -------------------------------------------------------------------------------

  /** Creates or replaces an EndpointSlice; returns the stored copy (with resourceVersion and uid). */
  applyEndpointSlice(slice: EndpointSlice): EndpointSlice {
    return this.#apply('endpointslices', slice) as EndpointSlice;
  }

  /** Deletes an EndpointSlice; false when it did not exist. */
  deleteEndpointSlice(namespace: string, name: string): boolean {
    return this.#delete('endpointslices', namespace, name);
  }

  /** Creates or replaces a Service; returns the stored copy. */
  applyService(svc: Service): Service {
    return this.#apply('services', svc) as Service;
  }

  /** Deletes a Service; false when it did not exist. */
  deleteService(namespace: string, name: string): boolean {
    return this.#delete('services', namespace, name);
  }

  getEndpointSlice(namespace: string, name: string): EndpointSlice | undefined {
    return structuredClone(this.#objects.get(`endpointslices/${namespace}/${name}`)) as EndpointSlice | undefined;
  }

  getService(namespace: string, name: string): Service | undefined {
    return structuredClone(this.#objects.get(`services/${namespace}/${name}`)) as Service | undefined;
  }

  /**
   * Creates or replaces an object of any served resource (Pods, Nodes, ConfigMaps, webhook
   * configurations, ...); `kind` and `apiVersion` are filled in. Returns the stored copy.
   */
  applyObject(resource: FakeResource, object: FakeObject): FakeObject {
    const info = RESOURCES[resource];
    return this.#apply(resource, { ...object, kind: info.kind, apiVersion: info.version }) as FakeObject;
  }

  /** Deletes an object of any served resource (`namespace` ignored when cluster-scoped). */
  deleteObject(resource: FakeResource, namespace: string, name: string): boolean {
    return this.#delete(resource, RESOURCES[resource].clusterScoped ? '' : namespace, name);
  }

  /**
   * Answers requests matching `rule` with 403 Forbidden and kube-apiserver's RBAC message,
   * until `allowAll()`.
   */
  forbid(rule: ForbidRule): void {
    this.#forbidden.push(rule);
  }

  /** Drops every `forbid()` rule. */
  allowAll(): void {
    this.#forbidden.length = 0;
  }

  /**
   * Serves `GET /api/v1/namespaces/NS/pods/POD:PORT/proxy/PATH` by forwarding to `baseUrl` + PATH
   * (the pod proxy subresource). A pod without a target answers 503, as when the kubelet
   * cannot reach the container.
   */
  setPodProxy(namespace: string, pod: string, port: number, baseUrl: string): void {
    this.#podProxies.set(`${namespace}/${pod}:${port}`, baseUrl.replace(/\/+$/, ''));
  }

  #apply(resource: FakeResource, input: EndpointSlice | Service | FakeObject): StoredObject {
    const name = input.metadata.name;
    if (name === undefined || name === '') throw new Error(`${RESOURCES[resource].kind} needs metadata.name`);
    const namespace = RESOURCES[resource].clusterScoped ? '' : (input.metadata.namespace ?? 'default');
    const key = `${resource}/${namespace}/${name}`;
    const previous = this.#objects.get(key);
    const rv = ++this.#rv;
    const object = structuredClone(input) as StoredObject;
    object.metadata = {
      ...object.metadata,
      name,
      ...(namespace === '' ? {} : { namespace }),
      uid: previous?.metadata.uid ?? object.metadata.uid ?? `uid-${resource}-${++this.#uid}`,
      resourceVersion: String(rv),
    };
    this.#objects.set(key, object);
    this.#record({ rv, resource, type: previous === undefined ? 'ADDED' : 'MODIFIED', object, previous });
    return structuredClone(object);
  }

  #delete(resource: FakeResource, namespace: string, name: string): boolean {
    const key = `${resource}/${namespace}/${name}`;
    const previous = this.#objects.get(key);
    if (previous === undefined) return false;
    this.#objects.delete(key);
    const rv = ++this.#rv;
    const object = structuredClone(previous);
    object.metadata.resourceVersion = String(rv);
    this.#record({ rv, resource, type: 'DELETED', object, previous });
    return true;
  }

  #record(event: HistoryEvent): void {
    this.#history.push(event);
    const limit = this.#options.historyLimit ?? 1000;
    while (this.#history.length > limit) {
      const dropped = this.#history.shift()!;
      this.#compactedRv = dropped.rv;
    }
    for (const w of this.#watchers) this.#deliver(w, event);
  }

  // ---- failure hooks -------------------------------------------------------------------------

  /** Forgets the event history: a watch from any version older than now gets 410 Expired. */
  compactHistory(): void {
    this.#history.length = 0;
    this.#compactedRv = this.#rv;
    this.#listSnapshots.clear();
  }

  /**
   * Expires continue tokens, as compaction does: with no argument every token handed out so far;
   * with `{ next: n }` also the next `n` continue requests (even for tokens issued later), so a
   * test can break a paged LIST in the middle. Returns how many outstanding tokens were dropped.
   */
  expireContinueTokens(options: { next?: number } = {}): number {
    const n = this.#listSnapshots.size;
    this.#listSnapshots.clear();
    this.#expireNextContinues += options.next ?? 0;
    return n;
  }

  /** Sends `ERROR` 410 Expired to every open watch and ends it (etcd compaction mid-stream). */
  expireWatches(): number {
    let n = 0;
    for (const w of [...this.#watchers]) {
      n++;
      this.#write(w, { type: 'ERROR', object: statusObject(410, 'too old resource version', undefined) }, true);
      this.#endWatch(w);
    }
    return n;
  }

  /** Destroys the socket of every open watch (a connection reset); returns how many. */
  dropWatches(): number {
    let n = 0;
    for (const w of [...this.#watchers]) {
      n++;
      this.#removeWatcher(w);
      w.socket.destroy();
    }
    return n;
  }

  /** Makes every open watch silent: it stays open but never sends anything again. */
  stallWatches(): number {
    for (const w of this.#watchers) w.stalled = true;
    return this.#watchers.size;
  }

  /** Ends every open watch cleanly, as the server does when `timeoutSeconds` runs out. */
  endWatches(): number {
    const n = this.#watchers.size;
    for (const w of [...this.#watchers]) this.#endWatch(w);
    return n;
  }

  /** Sends a BOOKMARK with the current resourceVersion to every bookmark-enabled watch. */
  sendBookmarks(): void {
    for (const w of this.#watchers) {
      if (!w.bookmarks) continue;
      const info = RESOURCES[w.resource];
      this.#write(w, {
        type: 'BOOKMARK',
        object: { kind: info.kind, apiVersion: info.version, metadata: { resourceVersion: String(this.#rv) } },
      });
    }
  }

  /** Makes the next `count` matching requests fail with `statusCode`. */
  failRequests(failure: InjectedFailure): void {
    this.#failures.push({ spec: failure, left: failure.count });
  }

  /** Cancels every pending injected failure. */
  clearFailures(): void {
    this.#failures.length = 0;
  }

  /** Changes the required bearer token (undefined: no authentication). Open watches are kept. */
  setToken(token: string | undefined): void {
    this.#token = token;
  }

  /** Stops listening and destroys every connection; objects and history are kept. */
  async down(): Promise<void> {
    const server = this.#server;
    if (server === undefined) return;
    this.#server = undefined;
    for (const w of [...this.#watchers]) this.#removeWatcher(w);
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
    await closed;
  }

  /** Listens again on the same port after `down()`. */
  async up(): Promise<void> {
    if (this.#server !== undefined || this.#closed) return;
    await this.#listen(this.#port);
  }

  /** Stops for good. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#bookmarkTimer !== undefined) clearInterval(this.#bookmarkTimer);
    await this.down();
  }

  // ---- observation ---------------------------------------------------------------------------

  /** Open watch connections, optionally only those on one resource (and namespace). */
  openWatches(filter: { resource?: FakeResource; namespace?: string } = {}): number {
    let n = 0;
    for (const w of this.#watchers) {
      if (filter.resource !== undefined && w.resource !== filter.resource) continue;
      if (filter.namespace !== undefined && w.namespace !== filter.namespace) continue;
      n++;
    }
    return n;
  }

  /** Requests recorded so far that match `filter`. */
  requestsMatching(filter: Partial<Pick<RecordedRequest, 'verb' | 'resource' | 'namespace'>>): RecordedRequest[] {
    return this.requests.filter(
      (r) =>
        (filter.verb === undefined || r.verb === filter.verb) &&
        (filter.resource === undefined || r.resource === filter.resource) &&
        (filter.namespace === undefined || r.namespace === filter.namespace),
    );
  }

  /** Waits until `check()` is true (polling every 5 ms), or throws after `timeoutMs` (default 5000). */
  async waitFor(check: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline)
        throw new Error(`fake API server: timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  // ---- HTTP ----------------------------------------------------------------------------------

  async #listen(port: number): Promise<void> {
    const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => this.#handle(req, res);
    const tls = this.#options.tls;
    const server = tls === undefined ? http.createServer(handler) : https.createServer(tls, handler);
    server.keepAliveTimeout = 60_000;
    server.on('connection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
    if (tls !== undefined) {
      server.on('secureConnection', (socket: Socket) => {
        this.#sockets.add(socket);
        socket.on('close', () => this.#sockets.delete(socket));
      });
    }
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, this.#options.host ?? '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address();
    this.#port = typeof address === 'object' && address !== null ? address.port : port;
    this.#server = server;
  }

  #handle(req: http.IncomingMessage, res: http.ServerResponse): undefined {
    const url = new URL(req.url ?? '/', 'http://fake');
    const query = Object.fromEntries(url.searchParams);
    const route = this.#route(url.pathname);
    const watch = query.watch === '1' || query.watch === 'true';
    const verb: RecordedRequest['verb'] =
      route === undefined ? 'unknown' : route.name !== undefined ? 'get' : watch ? 'watch' : 'list';
    const auth = req.headers.authorization;
    const token = auth?.startsWith('Bearer ') ? auth.slice(7) : undefined;
    const record = (statusCode: number): void => {
      this.requests.push({
        method: req.method ?? 'GET',
        path: url.pathname,
        query,
        verb,
        group: route === undefined ? '' : RESOURCES[route.resource].group,
        resource: route?.resource ?? '',
        namespace: route?.namespace,
        name: route?.name,
        statusCode,
        token,
      });
    };
    const fail = (
      code: number,
      message: string,
      details?: Status['details'],
      headers?: Record<string, string>,
    ): undefined => {
      record(code);
      res.writeHead(code, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(statusObject(code, message, details)));
    };

    if (this.#token !== undefined && token !== this.#token) return fail(401, 'Unauthorized');
    const proxy =
      this.#options.workloads !== true
        ? null
        : /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/:]+)(?::(\d+))?\/proxy(\/.*)?$/.exec(url.pathname);
    if (proxy !== null) return this.#proxyPod(req, res, url, proxy, token);
    if (route !== undefined) {
      const denied = this.#denied(route.resource, verb, route.namespace, route.name);
      if (denied !== undefined) return fail(403, denied, { name: route.name ?? '', kind: route.resource });
    }
    if (route === undefined) return fail(404, 'the server could not find the requested resource');
    if (req.method !== 'GET') return fail(405, `the fake API server serves GET only, not ${req.method}`);
    const injected = this.#failures.find(
      (f) =>
        f.left > 0 &&
        (f.spec.verb === undefined || f.spec.verb === verb) &&
        (f.spec.resource === undefined || f.spec.resource === route.resource),
    );
    if (injected !== undefined) {
      injected.left--;
      const headers: Record<string, string> =
        injected.spec.retryAfterSeconds === undefined ? {} : { 'retry-after': String(injected.spec.retryAfterSeconds) };
      return fail(injected.spec.statusCode, 'injected failure', undefined, headers);
    }

    const info = RESOURCES[route.resource];
    if (route.name !== undefined) {
      const object = this.#objects.get(`${route.resource}/${route.namespace ?? ''}/${route.name}`);
      if (object === undefined) {
        return fail(404, `${route.resource}${info.group === '' ? '' : `.${info.group}`} "${route.name}" not found`, {
          name: route.name,
          ...(info.group === '' ? {} : { group: info.group }),
          kind: route.resource,
        });
      }
      record(200);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(object));
      return;
    }

    let matches: (object: StoredObject) => boolean;
    try {
      const labels = query.labelSelector ? parseLabelSelector(query.labelSelector) : () => true;
      const fields = query.fieldSelector ? parseFieldSelector(query.fieldSelector) : () => true;
      matches = (o) =>
        (info.clusterScoped === true || o.metadata.namespace !== undefined) &&
        (route.namespace === undefined || o.metadata.namespace === route.namespace) &&
        labels((o.metadata.labels as Labels | undefined) ?? {}) &&
        fields({ 'metadata.name': o.metadata.name, 'metadata.namespace': o.metadata.namespace ?? '' });
    } catch (err) {
      return fail(400, err instanceof Error ? err.message : String(err));
    }

    if (!watch) {
      const limit = query.limit === undefined || query.limit === '' ? 0 : Number(query.limit);
      if (!Number.isInteger(limit) || limit < 0) return fail(400, `invalid limit: ${JSON.stringify(query.limit)}`);
      let rv = this.#rv;
      let items: readonly unknown[];
      let offset = 0;
      const token = query.continue;
      if (token !== undefined && token !== '') {
        const decoded = decodeContinue(token);
        if (decoded === undefined) return fail(400, 'continue key is not valid: malformed token');
        const snapshot = this.#listSnapshots.get(decoded.id);
        if (this.#expireNextContinues > 0 || snapshot === undefined || snapshot.rv < this.#compactedRv) {
          if (this.#expireNextContinues > 0) this.#expireNextContinues--;
          this.#listSnapshots.delete(decoded.id);
          return fail(410, CONTINUE_EXPIRED, undefined);
        }
        this.#listSnapshots.delete(decoded.id);
        rv = snapshot.rv;
        items = snapshot.items;
        offset = decoded.offset;
      } else {
        // Stable order, as etcd's key order: namespace, then name.
        items = [...this.#objects.entries()]
          .filter(([key, o]) => key.startsWith(`${route.resource}/`) && matches(o))
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([, o]) => listItem(structuredClone(o)));
      }
      const end = limit === 0 ? items.length : Math.min(items.length, offset + limit);
      const metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number } = {
        resourceVersion: String(rv),
      };
      if (end < items.length) {
        const id = this.#nextSnapshotId++;
        this.#listSnapshots.set(id, { rv, items });
        metadata.continue = encodeContinue({ id, offset: end });
        metadata.remainingItemCount = items.length - end;
      }
      record(200);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ kind: info.listKind, apiVersion: info.version, metadata, items: items.slice(offset, end) }),
      );
      return;
    }
    record(200);
    this.#startWatch(route.resource, route.namespace, matches, query, req, res);
  }

  /** kube-apiserver's RBAC message when a `forbid()` rule matches, else undefined. */
  #denied(resource: string, verb: string, namespace: string | undefined, name: string | undefined): string | undefined {
    const rule = this.#forbidden.find(
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

  /** The pod proxy subresource: forwards a GET to the target set with `setPodProxy`. */
  #proxyPod(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    url: URL,
    m: RegExpExecArray,
    token: string | undefined,
  ): undefined {
    const namespace = decodeURIComponent(m[1] ?? '');
    const pod = decodeURIComponent(m[2] ?? '');
    const port = m[3] ?? '80';
    const rest = m[4] ?? '/';
    const answer = (statusCode: number, body: string, type = 'application/json'): undefined => {
      this.requests.push({
        method: req.method ?? 'GET',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        verb: 'get',
        group: '',
        resource: 'pods/proxy',
        namespace,
        name: pod,
        statusCode,
        token,
      });
      res.writeHead(statusCode, { 'content-type': type });
      res.end(body);
      return undefined;
    };
    const status = (code: number, message: string): undefined =>
      answer(code, JSON.stringify(statusObject(code, message, { name: pod, kind: 'pods' })));
    const denied = this.#denied('pods/proxy', 'get', namespace, pod);
    if (denied !== undefined) return status(403, denied);
    if (!this.#objects.has(`pods/${namespace}/${pod}`)) return status(404, `pods "${pod}" not found`);
    const target = this.#podProxies.get(`${namespace}/${pod}:${port}`);
    const refused = (): undefined =>
      status(503, `error trying to reach service: dial tcp ${pod}:${port}: connect: connection refused`);
    if (target === undefined) return refused();
    const upstream = http.get(`${target}${rest}${url.search}`, (up) => {
      const chunks: Buffer[] = [];
      up.on('data', (c: Buffer) => chunks.push(c));
      up.on('end', () =>
        answer(up.statusCode ?? 502, Buffer.concat(chunks).toString('utf8'), String(up.headers['content-type'])),
      );
      up.on('error', refused);
    });
    upstream.on('error', refused);
    return undefined;
  }

  #route(pathname: string): { resource: FakeResource; namespace?: string; name?: string } | undefined {
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
      if (this.#options.workloads !== true && resource !== 'services' && resource !== 'endpointslices') continue;
      const clusterScoped = RESOURCES[resource].clusterScoped === true;
      const namespace = m[1] === undefined || clusterScoped ? undefined : decodeURIComponent(m[1]);
      const name = m[2] === undefined ? undefined : decodeURIComponent(m[2]);
      if (name !== undefined && namespace === undefined && !clusterScoped) return undefined;
      return { resource, ...(namespace === undefined ? {} : { namespace }), ...(name === undefined ? {} : { name }) };
    }
    return undefined;
  }

  #startWatch(
    resource: FakeResource,
    namespace: string | undefined,
    matches: (object: StoredObject) => boolean,
    query: Record<string, string>,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): void {
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    const watcher: Watcher = {
      resource,
      namespace,
      matches,
      res,
      socket: req.socket,
      bookmarks: query.allowWatchBookmarks === 'true',
      stalled: false,
      timers: [],
    };
    const fromText = query.resourceVersion;
    if (fromText === undefined || fromText === '' || fromText === '0') {
      // No version: the current state as synthetic ADDED events, then changes.
      for (const [key, object] of this.#objects) {
        if (key.startsWith(`${resource}/`) && matches(object)) this.#write(watcher, { type: 'ADDED', object });
      }
    } else {
      const from = Number(fromText);
      if (!Number.isInteger(from) || from < this.#compactedRv) {
        this.#write(
          watcher,
          {
            type: 'ERROR',
            object: statusObject(410, `too old resource version: ${fromText} (${this.#compactedRv})`),
          },
          true,
        );
        res.end();
        return;
      }
      for (const event of this.#history) if (event.rv > from) this.#deliver(watcher, event);
    }
    this.#watchers.add(watcher);
    const timeoutSeconds = Number(query.timeoutSeconds);
    if (Number.isFinite(timeoutSeconds) && timeoutSeconds > 0) {
      // A stalled watch sends nothing, not even the end of the stream.
      const t = setTimeout(() => {
        if (!watcher.stalled) this.#endWatch(watcher);
      }, timeoutSeconds * 1000);
      t.unref();
      watcher.timers.push(t);
    }
    res.on('close', () => this.#removeWatcher(watcher));
  }

  #deliver(w: Watcher, event: HistoryEvent): void {
    if (event.resource !== w.resource) return;
    const now = w.matches(event.object);
    const before = event.previous !== undefined && w.matches(event.previous);
    let type: 'ADDED' | 'MODIFIED' | 'DELETED' | undefined;
    if (event.type === 'ADDED') type = now ? 'ADDED' : undefined;
    else if (event.type === 'DELETED') type = before ? 'DELETED' : undefined;
    else if (before && now) type = 'MODIFIED';
    else if (now) type = 'ADDED';
    else if (before) type = 'DELETED';
    if (type !== undefined) this.#write(w, { type, object: event.object });
  }

  #write(w: Watcher, event: unknown, evenIfStalled = false): void {
    if (w.stalled && !evenIfStalled) return;
    if (w.res.writableEnded || w.res.destroyed) return;
    w.res.write(`${JSON.stringify(event)}\n`);
  }

  #endWatch(w: Watcher): void {
    this.#removeWatcher(w);
    if (!w.res.writableEnded) w.res.end();
  }

  #removeWatcher(w: Watcher): void {
    this.#watchers.delete(w);
    for (const t of w.timers) clearTimeout(t);
    w.timers.length = 0;
  }
}
