/**
 * Routing and header rewriting for one request head on the HTTP/1.1 data path: what to do with
 * it (refuse, hand to node:http, or forward) and, to forward it, the cluster, the upstream
 * transport, the TLS server name and the request head to write upstream — hop-by-hop headers
 * out, `X-Forwarded-*` and `Via` in, and the framing the proxy's own, from what its parser
 * decided (never a framing header copied from the client). Pure: no socket is touched.
 *
 * Refused: CONNECT (405), a bad request target or host (400), an upgrade with a body (400), a
 * host no route serves (404), an upgrade to an `h2` cluster (501), a cluster with nothing to
 * pick (503 with the reason). An `h2c` upgrade is declined by ignoring it (RFC 9113 §3.1
 * leaves that to the server).
 */
import { requestFraming, serializeHeaders, upstreamRequestHeaders } from '../hop-headers.js';
import type { ProxyCluster } from '../proxy-cluster.js';
import { isValidHost, splitRequestTarget } from '../route-table.js';
import type { Http1Context } from './http1-context.js';
import type { RequestHead } from './message-head.js';
import type { Http1Upstream } from './upstream-pool.js';

/** A request forwarded on the data path. */
export interface ForwardRoute {
  readonly type: 'forward';
  readonly cluster: ProxyCluster;
  readonly upstream: Http1Upstream;
  /** The TLS server name upstream sockets are verified for ('' for plain HTTP). */
  readonly servername: string;
  /** The path sent upstream (also the access log's). */
  readonly path: string;
  /** The protocols an upgrade request asks for (WebSocket...); undefined for plain requests. */
  readonly upgrade: string | undefined;
  /** The request head to write upstream, blank line included. */
  readonly upHead: string;
}

export type RouteDecision =
  | ForwardRoute
  | { readonly type: 'reject'; readonly status: number; readonly reason: string; readonly close: boolean }
  /** A cluster this path does not reach (`h2`): node:http takes the connection. */
  | { readonly type: 'handoff' };

/** Who sent the request, for the forwarding headers. */
export interface ClientInfo {
  readonly address: string;
  /** `X-Forwarded-Client-Cert` of a verified client certificate. */
  readonly cert: string | undefined;
}

const H2C = /(^|[\s,])h2c([\s,]|$)/i;

function reject(status: number, reason: string, close: boolean): RouteDecision {
  return { type: 'reject', status, reason, close };
}

/** Decides what happens to `head`; `hasBody` when a body follows (a refusal then closes the connection). */
export function routeRequest(
  head: RequestHead,
  hasBody: boolean,
  ctx: Http1Context,
  client: ClientInfo,
): RouteDecision {
  const method = head.method;
  if (method === 'CONNECT') return reject(405, 'method-not-allowed', true);
  let upgrade = head.upgrade;
  if (upgrade !== undefined && H2C.test(upgrade)) upgrade = undefined;
  if (upgrade !== undefined && hasBody) return reject(400, 'bad-request', true);
  const target = splitRequestTarget(head.target, head.host);
  if (target === undefined) return reject(400, 'bad-request-target', true);
  if ((target.host !== undefined && !isValidHost(target.host)) || (head.host !== undefined && !isValidHost(head.host)))
    return reject(400, 'bad-host', true);
  const match = ctx.state().routes.match(target.host, target.path, target.absolute);
  if (match === undefined) return reject(404, 'no-route', hasBody);
  const cluster = match.cluster;
  const upstream = cluster.h1;
  if (upstream === undefined) {
    return upgrade === undefined ? { type: 'handoff' } : reject(501, 'upgrade-not-supported', true);
  }
  const unavailable = cluster.unavailableReason();
  if (unavailable !== undefined) return reject(503, unavailable, hasBody);
  const headers = upstreamRequestHeaders(head.headers, {
    clientAddress: client.address,
    proto: ctx.proto,
    host: target.host ?? '',
    version: '1.1',
    hostRewrite: cluster.config.hostRewrite,
    clientCert: client.cert,
    trustForwarded: ctx.trustForwarded,
  });
  const framing = requestFraming(head.chunked, head.contentLength);
  const upgrading = upgrade === undefined ? '' : `connection: upgrade\r\nupgrade: ${upgrade}\r\n`;
  return {
    type: 'forward',
    cluster,
    upstream,
    servername: cluster.servernameFor(target.host),
    path: target.path,
    upgrade,
    upHead: `${method} ${target.path} HTTP/1.1\r\n${serializeHeaders(headers)}${framing}${upgrading}\r\n`,
  };
}
