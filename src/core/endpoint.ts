/**
 * An endpoint: one address and port of a Service, with Kubernetes' endpoint conditions.
 * Absent `ready` / `serving` mean true and absent `terminating` means false, exactly as in
 * `discovery.k8s.io/v1` EndpointSlices. `key` (`ip:port`, `[v6]:port`) identifies the endpoint
 * across snapshots and keys its connection pool and load record.
 */
import { isIP } from 'node:net';
import { describeValue, ErrorCodes, EvenlbError } from './errors.js';

export interface EndpointConditions {
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
}

/** The object an endpoint refers to (usually its Pod). */
export interface TargetRef {
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
  readonly uid?: string;
}

export interface Endpoint {
  /** IPv4 or IPv6 address, never bracketed (or a host name for DNS/FQDN-style endpoints). */
  readonly address: string;
  readonly port: number;
  /** Relative weight, > 0; 1 unless stated. */
  readonly weight: number;
  readonly zone?: string;
  /**
   * EndpointSlice `hints.forZones`: the zones whose clients this endpoint should serve
   * (topology-aware routing). Absent when the slice carries no hints.
   */
  readonly forZones?: readonly string[];
  readonly nodeName?: string;
  readonly targetRef?: TargetRef;
  readonly conditions: EndpointConditions;
  /** `endpointKey(address, port)`, precomputed. */
  readonly key: string;
}

/** What callers may pass to `createEndpoint`: conditions and weight optional. */
export interface EndpointInput {
  address: string;
  port: number;
  weight?: number;
  zone?: string;
  forZones?: readonly string[];
  nodeName?: string;
  targetRef?: TargetRef;
  conditions?: { ready?: boolean | null; serving?: boolean | null; terminating?: boolean | null };
}

/** `ip:port`, or `[ipv6]:port`. */
export function endpointKey(address: string, port: number): string {
  return isIP(address) === 6 ? `[${address}]:${port}` : `${address}:${port}`;
}

function invalid(field: string, expected: string, value: unknown): EvenlbError {
  return new EvenlbError(
    ErrorCodes.INVALID_OPTION,
    `endpoint: "${field}" must be ${expected}; received ${describeValue(value)}`,
    { details: { field, expected } },
  );
}

/**
 * Builds a frozen endpoint with Kubernetes' condition defaults.
 *
 * @example
 * createEndpoint({ address: '10.0.0.1', port: 8443, conditions: { ready: false, terminating: true } })
 * // → conditions { ready: false, serving: true, terminating: true }, key '10.0.0.1:8443'
 */
export function createEndpoint(input: EndpointInput): Endpoint {
  if (input === null || typeof input !== 'object') throw invalid('(endpoint)', 'an object', input);
  const { port } = input;
  let address = input.address;
  if (typeof address !== 'string' || address.length === 0) throw invalid('address', 'a non-empty string', address);
  if (address.startsWith('[') && address.endsWith(']')) {
    // "[v6]" as in URLs and keys: store the bare address, which is what sockets connect to.
    const inner = address.slice(1, -1);
    if (isIP(inner) !== 6) throw invalid('address', 'an IPv6 address when in brackets', address);
    address = inner;
  }
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw invalid('port', 'an integer between 1 and 65535', port);
  const weight = input.weight ?? 1;
  if (typeof weight !== 'number' || !Number.isFinite(weight) || weight <= 0) {
    throw invalid('weight', 'a finite number > 0', weight);
  }
  const forZones = input.forZones;
  if (
    forZones !== undefined &&
    (!Array.isArray(forZones) || !forZones.every((z) => typeof z === 'string' && z !== ''))
  ) {
    throw invalid('forZones', 'an array of non-empty zone names', forZones);
  }
  const c = input.conditions ?? {};
  for (const name of ['ready', 'serving', 'terminating'] as const) {
    const v = c[name];
    if (v !== undefined && v !== null && typeof v !== 'boolean') throw invalid(`conditions.${name}`, 'a boolean', v);
  }
  const endpoint: Endpoint = {
    address,
    port,
    weight,
    ...(input.zone === undefined ? {} : { zone: input.zone }),
    ...(forZones === undefined ? {} : { forZones: Object.freeze([...forZones]) }),
    ...(input.nodeName === undefined ? {} : { nodeName: input.nodeName }),
    ...(input.targetRef === undefined ? {} : { targetRef: Object.freeze({ ...input.targetRef }) }),
    conditions: Object.freeze({
      ready: c.ready ?? true,
      serving: c.serving ?? true,
      terminating: c.terminating ?? false,
    }),
    key: endpointKey(address, port),
  };
  return Object.freeze(endpoint);
}

/** True when two endpoints with the same key differ in anything that matters for balancing or stats. */
export function endpointChanged(a: Endpoint, b: Endpoint): boolean {
  return (
    a.weight !== b.weight ||
    a.zone !== b.zone ||
    (a.forZones?.join(',') ?? '') !== (b.forZones?.join(',') ?? '') ||
    a.nodeName !== b.nodeName ||
    a.conditions.ready !== b.conditions.ready ||
    a.conditions.serving !== b.conditions.serving ||
    a.conditions.terminating !== b.conditions.terminating ||
    a.targetRef?.name !== b.targetRef?.name ||
    a.targetRef?.uid !== b.targetRef?.uid
  );
}
