/**
 * The one router: routing and request validation for every client protocol — the raw HTTP/1.1
 * data path, node:http (HTTP/1.0) and HTTP/2 streams ask it the same question (method, request
 * target, Host or `:authority`) and get the same answer: the cluster and path, or the local
 * reply to refuse with (`LOCAL_REPLIES`). CONNECT is refused (405: the proxy is not a tunnel),
 * a malformed target or host is 400 (a request without a host — HTTP/1.0 — matches only `*`
 * routes; HTTP/1.1 and HTTP/2 require one before they get here), a host no route
 * serves is 404 and never forwarded (the proxy is not an open proxy), and a routed cluster with
 * nothing to pick is 503 with the reason. Pure: reads the route table, touches no socket.
 */

import type { ProxyCluster } from '../upstream/proxy-cluster.js';
import type { LocalReason } from './local-reply.js';
import { isValidHost, type RouteTable, splitRequestTarget } from './route-table.js';

/** What the router reads of a request, whatever its protocol. */
export interface RouteQuery {
  readonly method: string;
  /** The request target (HTTP/1.x) or `:path` (HTTP/2). */
  readonly target: string;
  /** The Host header or `:authority`. */
  readonly host: string | undefined;
}

export type RouteDecision =
  | {
      readonly type: 'route';
      readonly cluster: ProxyCluster;
      /** The host the request is for (from an absolute-form target, else the Host header; none for an HTTP/1.0 request without one). */
      readonly host: string | undefined;
      /** The path sent upstream. */
      readonly path: string;
    }
  | { readonly type: 'refuse'; readonly reason: LocalReason };

function refuse(reason: LocalReason): RouteDecision {
  return { type: 'refuse', reason };
}

/**
 * Routes `query` by `routes`; the cluster may still have nothing to pick (see `unavailable`).
 *
 * @example
 * routeRequest({ method: 'GET', target: '/api', host: 'svc.test' }, routes); // { type: 'route', cluster, ... }
 */
export function routeRequest(query: RouteQuery, routes: RouteTable<ProxyCluster>): RouteDecision {
  if (query.method === 'CONNECT') return refuse('method-not-allowed');
  const target = splitRequestTarget(query.target, query.host);
  if (target === undefined) return refuse('bad-request-target');
  const host = target.host;
  if ((host !== undefined && !isValidHost(host)) || (query.host !== undefined && !isValidHost(query.host)))
    return refuse('bad-host');
  const match = routes.match(host, target.path, target.absolute);
  if (match === undefined) return refuse('no-route');
  return { type: 'route', cluster: match.cluster, host, path: target.path };
}

/**
 * Why `cluster` cannot take a request now (503), or undefined when an endpoint can be picked.
 *
 * @example
 * unavailable(cluster); // 'no-endpoints' while discovery found none
 */
export function unavailable(cluster: ProxyCluster): LocalReason | undefined {
  return cluster.unavailableReason();
}
