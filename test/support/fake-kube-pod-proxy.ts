/**
 * The pod proxy subresource of the fake Kubernetes API server:
 * `GET /api/v1/namespaces/NS/pods/POD:PORT/proxy/PATH` forwarded to the real server a test set
 * with `setPodProxy`, answered 403 when a `forbid()` rule matches, 404 for a missing pod and 503
 * when nothing listens, as kube-apiserver answers.
 */
import http from 'node:http';
import { deniedMessage, type ForbidRule, type RecordedRequest, statusObject } from './fake-kube-resources.js';
import type { FakeKubeStore } from './fake-kube-store.js';

/** What the pod proxy reads and records, owned by the server. */
export interface PodProxyContext {
  readonly requests: RecordedRequest[];
  readonly forbidden: readonly ForbidRule[];
  readonly store: FakeKubeStore;
  /** `namespace/pod:port` → base URL. */
  readonly targets: ReadonlyMap<string, string>;
}

/** The pod proxy subresource: forwards a GET to the target set with `setPodProxy`. */
export function proxyPod(
  pods: PodProxyContext,
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
    pods.requests.push({
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
  const denied = deniedMessage(pods.forbidden, 'pods/proxy', 'get', namespace, pod);
  if (denied !== undefined) return status(403, denied);
  if (pods.store.get(`pods/${namespace}/${pod}`) === undefined) return status(404, `pods "${pod}" not found`);
  const target = pods.targets.get(`${namespace}/${pod}:${port}`);
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
