/**
 * `ClientRoutes`, the routes of a balancing client: which `host:port` goes through which
 * `Cluster` (keys read by `hostPortKey`, the host reading the proxy's route table shares). Explicit
 * routes (`routes: { 'host:port': target }`) get their cluster at construction, so discovery
 * starts at once; with `kubernetes: true`, any `<svc>.<ns>.svc[.<clusterDomain>]:<port>`
 * gets a `k8s:///<svc>.<ns>:<port>` cluster on first use. Agent-level settings are the
 * defaults; a route object overrides them field by field (`tls` as a whole). Shared by the
 * undici `BalancedAgent` and the `node:http` agent from `createHttpAgent`.
 */

import { Cluster } from '../cluster/cluster.js';
import type { ClusterOptions } from '../cluster/cluster-options.js';
import {
  clusterOnlySpec,
  clusterOptionsSpec,
  clusterSettingsSpec,
  isEndpointSource,
} from '../cluster/cluster-options.js';
import type { ClusterStats } from '../cluster/cluster-stats.js';
import { describeValue, ErrorCodes, EvenlbError } from '../core/errors.js';
import { hostPortKey } from '../core/host.js';
import { type Input, opt, optionError, type Parsed, parseOptions } from '../core/options.js';
import type { Random } from '../core/random.js';
import { parseTarget } from '../core/target.js';
import type { EndpointSource } from '../discovery/endpoint-source.js';
// Registers the k8s:/// scheme (kubernetes: true routes need it); @kubernetes/client-node loads lazily.
import '../discovery/kubernetes/index.js';
import { ClientMetrics, type MetricsRegistry } from '../metrics/client-metrics.js';

/**
 * A route object: where the endpoints come from, and per-route overrides of the client's
 * settings — the cluster spec's own entries.
 */
const routeSpec = {
  target: clusterOptionsSpec.target,
  authority: clusterOptionsSpec.authority,
  ...clusterSettingsSpec,
};

/**
 * A route object, derived from `routeSpec`: a `target` plus any of the client's settings,
 * overriding them for this route field by field (`tls` as a whole).
 */
export interface RouteOptions extends Input<typeof routeSpec> {}

/** A route: a target URI, an `EndpointSource`, or a route object with per-route overrides. */
export type RouteSpec = string | EndpointSource | RouteOptions;

/** Stats of every route that exists so far. */
export interface RoutingStats {
  readonly name: string;
  readonly routes: readonly ClusterStats[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The spec of `RoutingOptions`; clients add their own fields to it. The cluster settings are
 * the agent-wide defaults a route may override; `clock`, `random`, `sourceOptions` and
 * `observer` are `clusterOnlySpec`'s, handed to every route's cluster.
 */
export const routingSpec = {
  /** `'host:port'` (as requests address it) → where its endpoints come from. */
  routes: opt.custom<Record<string, RouteSpec>, { optional: true }>(
    'an object of "host:port" → target',
    (v): v is Record<string, RouteSpec> => isObject(v),
    { optional: true },
  ),
  /**
   * Route `<svc>.<ns>.svc[.<clusterDomain>]:<port>` to `k8s:///<svc>.<ns>:<port>` automatically:
   * `true` or `{ clusterDomain }` (default `cluster.local`).
   */
  kubernetes: opt.custom<boolean | { clusterDomain?: string }, { optional: true }>(
    'a boolean or { clusterDomain }',
    (v): v is boolean | { clusterDomain?: string } => typeof v === 'boolean' || isObject(v),
    { optional: true },
  ),
  /** Label for metrics and stats; default `default`. */
  name: opt.string({ nonEmpty: true, default: 'default' }),
  /** Prometheus metrics on the caller's prom-client registry. */
  metrics: opt.custom<{ registry: MetricsRegistry }, { optional: true }>(
    '{ registry } with a prom-client Registry',
    (v): v is { registry: MetricsRegistry } => isObject(v) && isObject(v.registry),
    { optional: true },
  ),
  ...clusterSettingsSpec,
  ...clusterOnlySpec,
};

/**
 * Routing options shared by `BalancedAgent` and `createHttpAgent`, derived from `routingSpec`
 * (each field's meaning and default is the TSDoc of its spec entry). Every field has a spec
 * entry — the programmatic ones (`clock`, `random`, `sourceOptions`, `observer`) too, as
 * `custom` fields checked by shape — so nothing here is declared by hand.
 */
export interface RoutingOptions extends Input<typeof routingSpec> {}

export type ParsedRoutingOptions = Parsed<typeof routingSpec>;

const SETTINGS_KEYS = Object.keys(clusterSettingsSpec) as (keyof typeof clusterSettingsSpec)[];
const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';

/** `host:port` as `hostPortKey` reads it (lower case, no trailing dot, IPv6 in brackets). Throws for a key without a port. */
export function normalizeRouteKey(key: string, component = 'BalancedAgent'): string {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+):([0-9]{1,5})$/.exec(key.trim());
  const port = Number(m?.[2]);
  if (m === null || port < 1 || port > 65535) {
    throw new EvenlbError(
      ErrorCodes.INVALID_OPTION,
      `${component}: route key ${describeValue(key)} must be "host:port" (IPv6 as "[::1]:port")`,
      { details: { component, field: `routes.${key}` } },
    );
  }
  return hostPortKey(m[1] as string, port);
}

/** A balancing client's `host:port` → `Cluster` routes; it creates and owns the clusters. */
export class ClientRoutes {
  readonly name: string;
  readonly options: ParsedRoutingOptions;
  readonly metrics: ClientMetrics | undefined;
  readonly #component: string;
  readonly #clusters = new Map<string, Cluster>();
  readonly #kubernetesHost: RegExp | undefined;
  #closed = false;

  /**
   * @param options already parsed by the client with a spec that includes `routingSpec`.
   * @param provider what the metrics scrape reads stats from (the client).
   */
  constructor(
    options: ParsedRoutingOptions,
    component: string,
    provider: { readonly name: string; stats(): RoutingStats },
  ) {
    this.options = options;
    this.name = options.name;
    this.#component = component;
    if (options.metrics !== undefined) this.metrics = ClientMetrics.attach(options.metrics.registry, provider);
    const k = options.kubernetes;
    if (k !== undefined && k !== false) {
      const domain = k === true ? 'cluster.local' : (k.clusterDomain ?? 'cluster.local');
      if (typeof domain !== 'string' || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(domain)) {
        throw optionError(component, 'kubernetes.clusterDomain', 'a DNS domain such as "cluster.local"', domain);
      }
      const escaped = domain.replace(/\./g, '\\.');
      this.#kubernetesHost = new RegExp(`^(${LABEL})\\.(${LABEL})\\.svc(\\.${escaped})?\\.?:([0-9]+)$`);
    }
    for (const [rawKey, spec] of Object.entries(options.routes ?? {})) {
      const key = normalizeRouteKey(rawKey, component);
      this.#clusters.set(key, this.#createCluster(key, spec, `routes.${rawKey}`));
    }
  }

  /**
   * The cluster for `host:port` (normalised key), creating a Kubernetes route on first use;
   * undefined when the key is not routed. Throws when a Kubernetes route cannot be created.
   */
  lookup(key: string): Cluster | undefined {
    const existing = this.#clusters.get(key);
    if (existing !== undefined || this.#kubernetesHost === undefined || this.#closed) return existing;
    const m = this.#kubernetesHost.exec(key);
    if (m === null) return undefined;
    const [, svc, , ns, , , port] = m;
    const cluster = this.#createCluster(key, `k8s:///${svc}.${ns}:${port}`, `kubernetes route ${key}`);
    this.#clusters.set(key, cluster);
    return cluster;
  }

  clusters(): readonly Cluster[] {
    return [...this.#clusters.values()];
  }

  stats(): RoutingStats {
    return { name: this.name, routes: this.clusters().map((c) => c.stats()) };
  }

  /** Closes (or, with `err`, destroys) every cluster. */
  async close(err?: Error | null, provider?: object): Promise<void> {
    this.#closed = true;
    await Promise.all(this.clusters().map((c) => (err === undefined || err === null ? c.close() : c.destroy(err))));
    if (provider !== undefined) this.metrics?.detach(provider as never);
  }

  #createCluster(key: string, spec: RouteSpec, field: string): Cluster {
    const o = this.options;
    let target: string | EndpointSource;
    let overrides: Record<string, unknown> = {};
    if (typeof spec === 'string') {
      parseTarget(spec);
      target = spec;
    } else if (isEndpointSource(spec)) {
      target = spec;
    } else if (isObject(spec)) {
      const parsed = parseOptions(`${this.#component} ${field}`, spec, routeSpec);
      if (typeof parsed.target === 'string') parseTarget(parsed.target);
      target = parsed.target;
      overrides = spec;
    } else {
      throw optionError(this.#component, field, 'a target URI, an EndpointSource or a route object', spec);
    }
    const settings: Record<string, unknown> = {};
    for (const k of SETTINGS_KEYS) if (o[k] !== undefined) settings[k] = o[k];
    const random = o.random as (Random & { fork?: () => Random }) | undefined;
    const observer = this.metrics?.observer(this.name, o.observer) ?? o.observer;
    return new Cluster({
      ...settings,
      ...overrides,
      name: key,
      target,
      ...(o.clock === undefined ? {} : { clock: o.clock }),
      ...(random === undefined ? {} : { random: typeof random.fork === 'function' ? random.fork() : random }),
      ...(o.sourceOptions === undefined ? {} : { sourceOptions: o.sourceOptions }),
      ...(observer === undefined ? {} : { observer }),
    } as ClusterOptions);
  }
}
