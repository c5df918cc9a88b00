/**
 * Everything discovery knows about one Service: a list+watch of its EndpointSlices
 * (`labelSelector=kubernetes.io/service-name=NAME`) and of the Service itself
 * (`fieldSelector=metadata.name=NAME` on the namespace's services: a single-object watch that,
 * unlike watching from the object's own resourceVersion, never starts from a compacted
 * version). One `ServiceWatch` is shared by every source following the Service, whatever
 * port each selects; `KubernetesWatchCache` counts its users and closes it after the last.
 */
import type { Clock } from '../../core/clock.js';
import type { EvenlbError } from '../../core/errors.js';
import type { Random } from '../../core/random.js';
import { KubeApiClient } from './kube-api-client.js';
import { KubeConnection, type KubeConnectionConfig } from './kube-connection.js';
import { type EndpointSlice, isRecord, type Service } from './kube-objects.js';
import type { ReflectorStats, WatchTiming } from './reflector-options.js';
import { ResourceReflector } from './resource-reflector.js';

/** What is known about the Service, read synchronously by consumers. */
export interface ServiceWatchState {
  /** False until both the Service and its slices have been listed once. */
  readonly synced: boolean;
  /** The Service, `null` when it does not exist, `undefined` before its first LIST. */
  readonly service: Service | null | undefined;
  /** The Service's EndpointSlices by name (live map: read it synchronously). */
  readonly slices: ReadonlyMap<string, EndpointSlice>;
  /** The current list/watch failure, if any; the objects above are the last known ones. */
  readonly failure: EvenlbError | undefined;
}

export interface ServiceWatchOptions {
  readonly connection: KubeConnectionConfig;
  readonly namespace: string;
  readonly name: string;
  readonly clock: Clock;
  readonly random: Random;
  readonly timing: WatchTiming;
  /** Objects per LIST page; default 500. */
  readonly listPageSize?: number | undefined;
}

/**
 * Every API request a `ServiceWatch` makes, as RBAC sees it: deploy/rbac/ grants exactly this
 * (its test checks both ways). Services are listed with a name field selector, so `get` is
 * never needed.
 */
export const KUBERNETES_API_ACCESS = Object.freeze([
  Object.freeze({ apiGroup: 'discovery.k8s.io', resource: 'endpointslices', verbs: Object.freeze(['list', 'watch']) }),
  Object.freeze({ apiGroup: '', resource: 'services', verbs: Object.freeze(['list', 'watch']) }),
]);

function isEndpointSlice(value: unknown): value is EndpointSlice {
  return isRecord(value) && isRecord(value.metadata) && typeof value.addressType === 'string';
}

function isService(value: unknown): value is Service {
  return isRecord(value) && isRecord(value.metadata) && isRecord(value.spec);
}

export class ServiceWatch {
  readonly namespace: string;
  readonly name: string;
  readonly #connection: KubeConnection;
  readonly #slices: ResourceReflector<EndpointSlice>;
  readonly #services: ResourceReflector<Service>;
  readonly #listeners = new Set<() => void>();
  #closed = false;

  constructor(options: ServiceWatchOptions) {
    const { namespace, name, clock, random, timing, listPageSize } = options;
    this.namespace = namespace;
    this.name = name;
    this.#connection = new KubeConnection(options.connection);
    const client = new KubeApiClient(this.#connection);
    const notify = (): void => {
      if (this.#closed) return;
      for (const listener of [...this.#listeners]) {
        try {
          listener();
        } catch (err) {
          // A consumer's subscriber threw: that is its bug, not a discovery failure. Rethrow
          // outside the watch loop (like an EventEmitter listener) and keep serving the others.
          queueMicrotask(() => {
            throw err;
          });
        }
      }
    };
    const ns = encodeURIComponent(namespace);
    this.#slices = new ResourceReflector({
      client,
      path: `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`,
      query: { labelSelector: `kubernetes.io/service-name=${name}` },
      description: `EndpointSlices of Service ${namespace}/${name}`,
      accept: isEndpointSlice,
      clock,
      random,
      timing,
      listPageSize,
      onChange: notify,
    });
    this.#services = new ResourceReflector({
      client,
      path: `/api/v1/namespaces/${ns}/services`,
      query: { fieldSelector: `metadata.name=${name}` },
      description: `Service ${namespace}/${name}`,
      accept: isService,
      clock,
      random,
      timing,
      listPageSize,
      onChange: notify,
    });
  }

  /** Starts both watches; idempotent. */
  start(): void {
    this.#services.start();
    this.#slices.start();
  }

  state(): ServiceWatchState {
    const services = this.#services;
    const slices = this.#slices;
    return {
      synced: services.synced && slices.synced,
      service: services.synced ? (services.items.get(this.name) ?? null) : undefined,
      slices: slices.items,
      failure: slices.failure ?? services.failure,
    };
  }

  /** Counters of both watches. */
  stats(): { readonly endpointSlices: ReflectorStats; readonly service: ReflectorStats } {
    return { endpointSlices: { ...this.#slices.stats }, service: { ...this.#services.stats } };
  }

  /** Calls `listener` after every change of `state()`; returns an unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Stops both watches and closes the connection. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#listeners.clear();
    this.#slices.close();
    this.#services.close();
    await this.#connection.close();
  }
}
