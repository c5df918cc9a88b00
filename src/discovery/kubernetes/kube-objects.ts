/**
 * The Kubernetes wire objects discovery reads, exactly as the API server sends them as JSON:
 * `discovery.k8s.io/v1` EndpointSlices, `v1` Services, `meta/v1` Status and watch events.
 * Only the fields evenlb uses are typed, and every one of them is optional or nullable where
 * the API allows it: the API server is an external input and is read defensively (a field of
 * the wrong type is treated as absent, never trusted). The test API server builds the same
 * shapes, so the source and its fixture cannot drift apart.
 */

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
  resourceVersion?: string;
  uid?: string;
  generation?: number;
}

/** `discovery.k8s.io/v1` EndpointConditions: absent ready/serving mean true, absent terminating false. */
export interface EndpointSliceConditions {
  ready?: boolean | null;
  serving?: boolean | null;
  terminating?: boolean | null;
}

export interface ObjectReference {
  kind?: string;
  name?: string;
  namespace?: string;
  uid?: string;
}

export interface EndpointSliceEndpoint {
  /** Consumers use the first address only (the API documents the rest as unused). */
  addresses: string[];
  conditions?: EndpointSliceConditions;
  hostname?: string;
  nodeName?: string;
  zone?: string;
  /** Topology hints: the zones this endpoint should serve. */
  hints?: { forZones?: { name?: string }[] | null; forNodes?: { name?: string }[] | null } | null;
  targetRef?: ObjectReference;
}

export interface EndpointSlicePort {
  /** `""` or absent for a Service's single unnamed port. */
  name?: string;
  /** Absent means "all ports" and is only used by headless Services without ports. */
  port?: number | null;
  protocol?: string;
  appProtocol?: string;
}

export type AddressType = 'IPv4' | 'IPv6' | 'FQDN';

export interface EndpointSlice {
  apiVersion: 'discovery.k8s.io/v1';
  kind: 'EndpointSlice';
  metadata: ObjectMeta;
  addressType: AddressType;
  endpoints: EndpointSliceEndpoint[] | null;
  ports?: EndpointSlicePort[] | null;
}

export interface ServicePort {
  /** Required when a Service has more than one port; may be absent for a single port. */
  name?: string;
  port: number;
  /** A container port number or a container port name. */
  targetPort?: number | string;
  protocol?: string;
  appProtocol?: string;
  nodePort?: number;
}

export interface Service {
  apiVersion: 'v1';
  kind: 'Service';
  metadata: ObjectMeta;
  spec: {
    ports?: ServicePort[];
    selector?: Record<string, string>;
    type?: string;
    clusterIP?: string;
    publishNotReadyAddresses?: boolean;
    /** `PreferClose`, `PreferSameZone`, `PreferSameNode` (Kubernetes 1.31+). */
    trafficDistribution?: string | null;
  };
}

/** `meta/v1` Status, the body of API errors and of watch `ERROR` events. */
export interface Status {
  apiVersion: 'v1';
  kind: 'Status';
  metadata?: { resourceVersion?: string };
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: { name?: string; group?: string; kind?: string };
  code: number;
}

/** A LIST response: `EndpointSliceList`, `ServiceList`, ... */
export interface ObjectList<T> {
  apiVersion: string;
  kind: string;
  metadata: { resourceVersion?: string; continue?: string };
  items: T[];
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** One line of a watch stream. `ERROR` carries a Status; `BOOKMARK` an object with only a resourceVersion. */
export type WatchEvent<T> =
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: T }
  | { type: 'BOOKMARK'; object: { kind?: string; apiVersion?: string; metadata: { resourceVersion: string } } }
  | { type: 'ERROR'; object: Status };

/** True for a plain JSON object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `metadata.name` of an API object, or undefined when it is missing or not a string. */
export function objectName(object: unknown): string | undefined {
  if (!isRecord(object) || !isRecord(object.metadata)) return undefined;
  const name = object.metadata.name;
  return typeof name === 'string' && name !== '' ? name : undefined;
}

/** `metadata.resourceVersion` of an API object or list, or undefined. */
export function resourceVersionOf(object: unknown): string | undefined {
  if (!isRecord(object) || !isRecord(object.metadata)) return undefined;
  const rv = object.metadata.resourceVersion;
  return typeof rv === 'string' && rv !== '' ? rv : undefined;
}

/** True for a `meta/v1` Status object. */
export function isStatus(value: unknown): value is Status {
  return isRecord(value) && value.kind === 'Status' && typeof value.code === 'number';
}

/** True for a Status meaning "resource version too old": code 410, reason `Expired` or `Gone`. */
export function isExpiredStatus(value: unknown): boolean {
  return isStatus(value) && (value.code === 410 || value.reason === 'Expired' || value.reason === 'Gone');
}
