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
 * Its pieces: fake-kube-builders.ts (object builders), fake-kube-selectors.ts,
 * fake-kube-resources.ts (resource table, shared types, Status objects, routes, RBAC messages),
 * fake-kube-store.ts (objects, history, LIST pages), fake-kube-watches.ts (WATCH streams) and
 * fake-kube-pod-proxy.ts (the pod proxy subresource);
 * this module is the HTTP server and the test hooks, and re-exports what tests import.
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
import type { EndpointSlice, Service, Status } from '../../src/discovery/kubernetes/kube-objects.js';
import { proxyPod } from './fake-kube-pod-proxy.js';
import {
  deniedMessage,
  type FakeKubeApiServerOptions,
  type FakeObject,
  type FakeResource,
  type ForbidRule,
  type InjectedFailure,
  RESOURCES,
  type RecordedRequest,
  routeOf,
  type StoredObject,
  statusObject,
} from './fake-kube-resources.js';
import { type Labels, parseFieldSelector, parseLabelSelector } from './fake-kube-selectors.js';
import { FakeKubeStore } from './fake-kube-store.js';
import { FakeKubeWatches } from './fake-kube-watches.js';

export {
  type EndpointSliceSpec,
  type EndpointSpec,
  endpointSlice,
  type ServiceSpec,
  service,
} from './fake-kube-builders.js';
export type {
  FakeKubeApiServerOptions,
  FakeObject,
  FakeResource,
  ForbidRule,
  InjectedFailure,
  RecordedRequest,
} from './fake-kube-resources.js';
export { parseFieldSelector, parseLabelSelector } from './fake-kube-selectors.js';

export class FakeKubeApiServer {
  readonly #options: FakeKubeApiServerOptions;
  readonly #store: FakeKubeStore;
  readonly #watches: FakeKubeWatches;
  readonly #sockets = new Set<Socket>();
  readonly #failures: { spec: InjectedFailure; left: number }[] = [];
  /** Every request received, in order. */
  readonly requests: RecordedRequest[] = [];
  readonly #forbidden: ForbidRule[] = [];
  /** Pod proxy targets: `namespace/pod:port` → base URL. */
  readonly #podProxies = new Map<string, string>();
  #server: http.Server | undefined;
  #port = 0;
  #token: string | undefined;
  #bookmarkTimer: NodeJS.Timeout | undefined;
  #closed = false;

  private constructor(options: FakeKubeApiServerOptions) {
    this.#options = options;
    this.#token = options.token;
    this.#store = new FakeKubeStore(options.historyLimit ?? 1000, (event) => this.#watches.deliver(event));
    this.#watches = new FakeKubeWatches(this.#store);
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
    return this.#store.rv;
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
    return this.#store.apply('endpointslices', slice) as EndpointSlice;
  }

  /** Deletes an EndpointSlice; false when it did not exist. */
  deleteEndpointSlice(namespace: string, name: string): boolean {
    return this.#store.delete('endpointslices', namespace, name);
  }

  /** Creates or replaces a Service; returns the stored copy. */
  applyService(svc: Service): Service {
    return this.#store.apply('services', svc) as Service;
  }

  /** Deletes a Service; false when it did not exist. */
  deleteService(namespace: string, name: string): boolean {
    return this.#store.delete('services', namespace, name);
  }

  getEndpointSlice(namespace: string, name: string): EndpointSlice | undefined {
    return structuredClone(this.#store.get(`endpointslices/${namespace}/${name}`)) as EndpointSlice | undefined;
  }

  getService(namespace: string, name: string): Service | undefined {
    return structuredClone(this.#store.get(`services/${namespace}/${name}`)) as Service | undefined;
  }

  /**
   * Creates or replaces an object of any served resource (Pods, Nodes, ConfigMaps, webhook
   * configurations, ...); `kind` and `apiVersion` are filled in. Returns the stored copy.
   */
  applyObject(resource: FakeResource, object: FakeObject): FakeObject {
    const info = RESOURCES[resource];
    return this.#store.apply(resource, { ...object, kind: info.kind, apiVersion: info.version }) as FakeObject;
  }

  /** Deletes an object of any served resource (`namespace` ignored when cluster-scoped). */
  deleteObject(resource: FakeResource, namespace: string, name: string): boolean {
    return this.#store.delete(resource, RESOURCES[resource].clusterScoped ? '' : namespace, name);
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

  // ---- failure hooks -------------------------------------------------------------------------

  /** Forgets the event history: a watch from any version older than now gets 410 Expired. */
  compactHistory(): void {
    this.#store.compact();
  }

  /**
   * Expires continue tokens, as compaction does: with no argument every token handed out so far;
   * with `{ next: n }` also the next `n` continue requests (even for tokens issued later), so a
   * test can break a paged LIST in the middle. Returns how many outstanding tokens were dropped.
   */
  expireContinueTokens(options: { next?: number } = {}): number {
    return this.#store.expireContinueTokens(options.next ?? 0);
  }

  /** Sends `ERROR` 410 Expired to every open watch and ends it (etcd compaction mid-stream). */
  expireWatches(): number {
    return this.#watches.expire();
  }

  /** Destroys the socket of every open watch (a connection reset); returns how many. */
  dropWatches(): number {
    return this.#watches.drop();
  }

  /** Makes every open watch silent: it stays open but never sends anything again. */
  stallWatches(): number {
    return this.#watches.stall();
  }

  /** Ends every open watch cleanly, as the server does when `timeoutSeconds` runs out. */
  endWatches(): number {
    return this.#watches.end();
  }

  /** Sends a BOOKMARK with the current resourceVersion to every bookmark-enabled watch. */
  sendBookmarks(): void {
    this.#watches.sendBookmarks();
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
    this.#watches.forgetAll();
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
    return this.#watches.count(filter);
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
    const route = routeOf(url.pathname, this.#options.workloads === true);
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
    if (proxy !== null) {
      const pods = {
        requests: this.requests,
        forbidden: this.#forbidden,
        store: this.#store,
        targets: this.#podProxies,
      };
      return proxyPod(pods, req, res, url, proxy, token);
    }
    if (route !== undefined) {
      const denied = deniedMessage(this.#forbidden, route.resource, verb, route.namespace, route.name);
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
      const object = this.#store.get(`${route.resource}/${route.namespace ?? ''}/${route.name}`);
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
      const page = this.#store.list(route.resource, matches, limit, query.continue);
      if ('error' in page) return fail(page.error, page.message, undefined);
      const { metadata, items } = page;
      record(200);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: info.listKind, apiVersion: info.version, metadata, items }));
      return;
    }
    record(200);
    this.#watches.start(route.resource, route.namespace, matches, query, req, res);
  }
}
