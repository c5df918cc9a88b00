/**
 * What the raw HTTP/1.1 data path does with one parsed request head: the one router decides
 * (`routeRequest`: route, or the local reply to refuse with); this adds what only this codec
 * has — upgrades (WebSocket) and the hand-off of requests for `h2` clusters to node:http — and
 * builds the request head to write upstream: hop-by-hop headers out, `X-Forwarded-*` and `Via`
 * in, and the framing the proxy's own, from what its parser decided (never a framing header
 * copied from the client). Pure: no socket is touched.
 *
 * Refused besides what the router refuses: an upgrade with a body (400), an upgrade to an `h2`
 * cluster (501). A refusal closes the connection when the catalogue says so or when a body
 * follows that will not be read. An `h2c` upgrade is declined by ignoring it (RFC 9113 §3.1
 * leaves that to the server).
 */
import { requestFraming, serializeHeaders, upstreamRequestHeaders } from '../routing/hop-headers.js';
import { LOCAL_REPLIES, type LocalReason } from '../routing/local-reply.js';
import { routeRequest, unavailable } from '../routing/request-router.js';
import type { RouteTable } from '../routing/route-table.js';
import type { ProxyCluster } from '../upstream/proxy-cluster.js';
import { named, type RequestHead } from './message-head.js';
import type { ExchangeRequest } from './upstream-exchange.js';

/** A request forwarded on the data path. */
export interface ForwardRoute extends ExchangeRequest {
  readonly type: 'forward';
  /** The path sent upstream (also the access log's). */
  readonly path: string;
}

export type RouteDecision =
  | ForwardRoute
  | { readonly type: 'reject'; readonly reason: LocalReason; readonly close: boolean }
  /** A cluster this path does not reach (`h2`): node:http takes the connection. */
  | { readonly type: 'handoff' };

/** What routing reads of the listener (the data path's `Http1Context` is one). */
export interface RouteContext {
  readonly proto: 'http' | 'https';
  /** `listeners[].trustForwardedHeaders`: keep the client's forwarding headers. */
  readonly trustForwarded: boolean;
  state(): { readonly routes: RouteTable<ProxyCluster> };
}

/** Who sent the request, for the forwarding headers. */
export interface ClientInfo {
  readonly address: string;
  /** `X-Forwarded-Client-Cert` of a verified client certificate. */
  readonly cert: string | undefined;
}

const H2C = /(^|[\s,])h2c([\s,]|$)/i;

function reject(reason: LocalReason, hasBody: boolean): RouteDecision {
  return { type: 'reject', reason, close: LOCAL_REPLIES[reason].closes || hasBody };
}

/** Decides what happens to `head`; `hasBody` when a body follows (a refusal then closes the connection). */
export function routeHttp1(head: RequestHead, hasBody: boolean, ctx: RouteContext, client: ClientInfo): RouteDecision {
  const method = head.method;
  let upgrade = head.upgrade;
  if (upgrade !== undefined && H2C.test(upgrade)) upgrade = undefined;
  if (upgrade !== undefined && hasBody) return reject('bad-request', true);
  const routed = routeRequest({ method, target: head.target, host: head.host }, ctx.state().routes);
  if (routed.type === 'refuse') return reject(routed.reason, hasBody);
  const cluster = routed.cluster;
  const upstream = cluster.h1;
  if (upstream === undefined)
    return upgrade === undefined ? { type: 'handoff' } : reject('upgrade-not-supported', true);
  const down = unavailable(cluster);
  if (down !== undefined) return reject(down, hasBody);
  const headers = upstreamRequestHeaders(head.headers, {
    clientAddress: client.address,
    proto: ctx.proto,
    host: routed.host ?? '',
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
    servername: cluster.servernameFor(routed.host),
    method,
    hasBody,
    path: routed.path,
    upgrade,
    upHead: `${method} ${routed.path} HTTP/1.1\r\n${serializeHeaders(headers)}${framing}${upgrading}\r\n`,
  };
}

/**
 * `Expect` (RFC 9110 §10.1.1): `100-continue` is met here — the data path answers it once the
 * request is routed, and the upstream never sees the header; any other expectation is not (417).
 *
 * @example
 * expectationMet(head); // false for `Expect: something-else`
 */
export function expectationMet(head: RequestHead): boolean {
  for (let i = 0; i < head.headers.length; i += 2) {
    const name = head.headers[i] as string;
    if (name.length !== 6 || !named(name, 'expect')) continue;
    if ((head.headers[i + 1] as string).trim().toLowerCase() !== '100-continue') return false;
  }
  return true;
}

/**
 * The method of a request whose head was refused before it parsed (a reply to HEAD still gets
 * no body); GET for anything else.
 *
 * @example
 * methodOfHead(Buffer.from('HEAD / HTTP/1.1\r\nHost : x\r\n\r\n')); // 'HEAD'
 */
export function methodOfHead(buf: Buffer): string {
  return buf.length >= 5 && buf.toString('latin1', 0, 5) === 'HEAD ' ? 'HEAD' : 'GET';
}
