/**
 * Between evenlb endpoints (one `ip:port` with conditions) and grpc-js endpoints (a list of
 * addresses, no conditions).
 */
import { createEndpoint, type Endpoint } from '../core/endpoint.js';
import { EndpointSet } from '../core/endpoint-set.js';
import type { GrpcEndpoint } from './grpc-module.js';

/** grpc-js endpoints for evenlb endpoints (one address each): all of them, or only the eligible ones. */
export function toGrpcEndpoints(set: EndpointSet, eligibleOnly: boolean): GrpcEndpoint[] {
  const list = eligibleOnly ? set.eligible() : set.endpoints;
  return list.map((e) => ({ addresses: [{ host: e.address, port: e.port }] }));
}

/**
 * An endpoint set for what another resolver (grpc-js's `dns:///`, `ipv4:///`) delivered: each
 * grpc-js endpoint is a ready evenlb endpoint keyed by its first TCP address; the grpc-js
 * endpoint itself (all its addresses) is kept for its subchannel. Unix-socket endpoints have no
 * `ip:port` to balance by and are skipped.
 */
export function fromGrpcEndpoints(list: readonly GrpcEndpoint[]): {
  set: EndpointSet;
  byKey: Map<string, GrpcEndpoint>;
} {
  const endpoints: Endpoint[] = [];
  const byKey = new Map<string, GrpcEndpoint>();
  for (const ge of list) {
    const first = ge.addresses.find((a): a is { host: string; port: number } => 'host' in a && 'port' in a);
    if (first === undefined) continue;
    const e = createEndpoint({ address: first.host, port: first.port });
    endpoints.push(e);
    byKey.set(e.key, ge);
  }
  return { set: new EndpointSet(endpoints), byKey };
}

/** The grpc-js endpoint of an evenlb endpoint: the resolved one when known, else its one address. */
export function grpcEndpointOf(endpoint: Endpoint, resolved: ReadonlyMap<string, GrpcEndpoint>): GrpcEndpoint {
  return resolved.get(endpoint.key) ?? { addresses: [{ host: endpoint.address, port: endpoint.port }] };
}
