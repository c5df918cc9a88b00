/**
 * Builders for the Kubernetes objects the fake API server serves: an EndpointSlice as the
 * EndpointSlice controller writes it and a Service, both of the real wire shape.
 */
import { isIP } from 'node:net';
import type {
  AddressType,
  EndpointSlice,
  EndpointSliceEndpoint,
  EndpointSlicePort,
  Service,
  ServicePort,
} from '../../src/discovery/kubernetes/kube-objects.js';

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
