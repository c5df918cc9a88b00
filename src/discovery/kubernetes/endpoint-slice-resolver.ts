/**
 * Turns a Service and its EndpointSlices into an `EndpointSet` for one port, the way
 * kube-apiserver and kube-proxy do. A port number is a Service port: it is mapped through the
 * Service's port `name` (and protocol) to the slice port of that name; a port name matches
 * slice ports by name directly (`""` is a Service's single unnamed port). Endpoints are the
 * union over all slices, each endpoint's first address with Kubernetes' condition defaults; an
 * address listed by two slices is kept once (the first slice by name wins, as in kube-proxy's
 * de-duplication). FQDN slices and addresses that do not match their slice's `addressType` are
 * skipped. Pure: no I/O, no time, so it is unit-tested on its own.
 */
import { isIP } from 'node:net';
import { createEndpoint, type Endpoint, type TargetRef } from '../../core/endpoint.js';
import { EndpointSet } from '../../core/endpoint-set.js';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import {
  type EndpointSlice,
  type EndpointSliceEndpoint,
  isRecord,
  type Service,
  type ServicePort,
} from './kube-objects.js';

export interface ResolveInput {
  readonly namespace: string;
  readonly name: string;
  /** The Service; `null` when it does not exist. */
  readonly service: Service | null;
  readonly slices: Iterable<EndpointSlice>;
  /** A Service port number or a port name, as in `k8s:///name.namespace:PORT`. */
  readonly port: number | string;
  /** The caller's zone, carried on the resulting set for zone routing. */
  readonly callerZone?: string;
}

export type ResolveResult =
  | {
      readonly type: 'endpoints';
      readonly endpoints: EndpointSet;
      /** Names of FQDN slices that were skipped (evenlb balances over IP addresses). */
      readonly skippedFqdnSlices: readonly string[];
    }
  | { readonly type: 'not-found'; readonly error: EvenlbError };

/** The Service port a target's port selects: its name (`""` if unnamed) and protocol. */
interface SelectedPort {
  readonly name: string;
  readonly protocol: string;
}

function notFound(input: ResolveInput, message: string, reason: string): ResolveResult {
  return {
    type: 'not-found',
    error: new EvenlbError(ErrorCodes.SERVICE_NOT_FOUND, message, {
      details: { namespace: input.namespace, name: input.name, port: input.port, reason },
    }),
  };
}

function describePorts(ports: readonly ServicePort[]): string {
  if (ports.length === 0) return 'it declares no ports';
  const list = ports.map((p) => (p.name ? `${p.port} (${p.name})` : String(p.port))).join(', ');
  return `its ports are ${list}`;
}

function servicePorts(service: Service): ServicePort[] {
  const ports = isRecord(service.spec) ? service.spec.ports : undefined;
  if (!Array.isArray(ports)) return [];
  return ports.filter((p): p is ServicePort => isRecord(p) && Number.isInteger(p.port));
}

const protocolOf = (p: { protocol?: string | undefined }): string =>
  typeof p.protocol === 'string' ? p.protocol : 'TCP';

function selectPort(input: ResolveInput, service: Service): SelectedPort | ResolveResult {
  const ports = servicePorts(service);
  const id = `${input.namespace}/${input.name}`;
  let matches: ServicePort[];
  if (typeof input.port === 'number') {
    matches = ports.filter((p) => p.port === input.port);
    if (matches.length === 0) {
      return notFound(input, `Service ${id} has no port ${input.port}; ${describePorts(ports)}`, 'port-not-found');
    }
  } else {
    matches = ports.filter((p) => (p.name ?? '') === input.port);
    if (matches.length === 0) {
      return notFound(
        input,
        `Service ${id} has no port named ${JSON.stringify(input.port)}; ${describePorts(ports)}`,
        'port-not-found',
      );
    }
  }
  // The same number may be declared for TCP and UDP (DNS does): HTTP needs the TCP one.
  const chosen = matches.find((p) => protocolOf(p) === 'TCP') ?? matches[0]!;
  return { name: chosen.name ?? '', protocol: protocolOf(chosen) };
}

function targetRefOf(endpoint: EndpointSliceEndpoint): TargetRef | undefined {
  const ref = endpoint.targetRef;
  if (!isRecord(ref) || typeof ref.kind !== 'string' || typeof ref.name !== 'string') return undefined;
  return {
    kind: ref.kind,
    name: ref.name,
    ...(typeof ref.namespace === 'string' ? { namespace: ref.namespace } : {}),
    ...(typeof ref.uid === 'string' ? { uid: ref.uid } : {}),
  };
}

function booleanOrUndefined(value: unknown): boolean | undefined {
  return typeof value === 'boolean' ? value : undefined;
}

/** `hints.forZones[].name`, or undefined when the endpoint carries no zone hints. */
function forZonesOf(endpoint: EndpointSliceEndpoint): string[] | undefined {
  const hints = endpoint.hints;
  if (!isRecord(hints) || !Array.isArray(hints.forZones)) return undefined;
  const zones = hints.forZones
    .map((z) => (isRecord(z) && typeof z.name === 'string' && z.name !== '' ? z.name : undefined))
    .filter((z): z is string => z !== undefined);
  return zones.length > 0 ? zones : undefined;
}

function endpointOf(raw: unknown, family: 4 | 6, port: number): Endpoint | undefined {
  if (!isRecord(raw) || !Array.isArray(raw.addresses)) return undefined;
  const e = raw as unknown as EndpointSliceEndpoint;
  const address = e.addresses[0];
  if (typeof address !== 'string' || isIP(address) !== family) return undefined;
  const c = isRecord(e.conditions) ? e.conditions : {};
  const targetRef = targetRefOf(e);
  const forZones = forZonesOf(e);
  return createEndpoint({
    address,
    port,
    ...(typeof e.zone === 'string' ? { zone: e.zone } : {}),
    ...(forZones === undefined ? {} : { forZones }),
    ...(typeof e.nodeName === 'string' ? { nodeName: e.nodeName } : {}),
    ...(targetRef === undefined ? {} : { targetRef }),
    conditions: {
      ready: booleanOrUndefined(c.ready),
      serving: booleanOrUndefined(c.serving),
      terminating: booleanOrUndefined(c.terminating),
    },
  });
}

function slicePort(slice: EndpointSlice, selected: SelectedPort): number | undefined {
  if (!Array.isArray(slice.ports)) return undefined;
  for (const p of slice.ports) {
    if (!isRecord(p) || (p.name ?? '') !== selected.name || protocolOf(p) !== selected.protocol) continue;
    const port = p.port;
    if (typeof port === 'number' && Number.isInteger(port) && port >= 1 && port <= 65535) return port;
  }
  return undefined;
}

/**
 * The endpoint set for one port of a Service, or "not found" (no Service, or no such port on it).
 *
 * @example
 * resolveServiceEndpoints({ namespace: 'policy', name: 'webhook', service, slices, port: 443 })
 * // → { type: 'endpoints', endpoints: EndpointSet [10.0.0.1:8443, ...], skippedFqdnSlices: [] }
 */
export function resolveServiceEndpoints(input: ResolveInput): ResolveResult {
  const { service } = input;
  if (service === null) {
    return notFound(input, `Service ${input.namespace}/${input.name} does not exist`, 'service-not-found');
  }
  const selected = selectPort(input, service);
  if ('type' in selected) return selected;

  const slices = [...input.slices].sort((a, b) => {
    const an = a.metadata?.name ?? '';
    const bn = b.metadata?.name ?? '';
    return an < bn ? -1 : an > bn ? 1 : 0;
  });
  const skippedFqdnSlices: string[] = [];
  const byKey = new Map<string, Endpoint>();
  for (const slice of slices) {
    if (slice.addressType === 'FQDN') {
      skippedFqdnSlices.push(slice.metadata?.name ?? '(unnamed)');
      continue;
    }
    const family = slice.addressType === 'IPv4' ? 4 : slice.addressType === 'IPv6' ? 6 : undefined;
    if (family === undefined || !Array.isArray(slice.endpoints)) continue;
    const port = slicePort(slice, selected);
    if (port === undefined) continue;
    for (const raw of slice.endpoints) {
      const endpoint = endpointOf(raw, family, port);
      if (endpoint !== undefined && !byKey.has(endpoint.key)) byKey.set(endpoint.key, endpoint);
    }
  }
  const td = isRecord(service.spec) ? service.spec.trafficDistribution : undefined;
  const meta = {
    ...(typeof td === 'string' && td !== '' ? { trafficDistribution: td } : {}),
    ...(input.callerZone === undefined ? {} : { callerZone: input.callerZone }),
  };
  return { type: 'endpoints', endpoints: new EndpointSet(byKey.values(), meta), skippedFqdnSlices };
}
