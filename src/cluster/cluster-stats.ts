/**
 * The one stats model: the shape of `Cluster.stats()`, of each route in `BalancedAgent.stats()`
 * and of each gRPC channel in `registration.stats()`, and the base of what the proxy serves
 * (`ProxyClusterStats`: these fields plus the latency quantiles only the proxy measures). Per
 * endpoint counters and state, and per cluster imbalance figures over a sliding window.
 */
import type { Balancer } from '../balancing/balancer.js';
import type { ZoneRoutingState } from '../balancing/shaping/zone-preference.js';
import type { Endpoint } from '../core/endpoint.js';
import { type Imbalance, imbalance } from '../metrics/imbalance.js';
import type { EndpointPool } from '../pool/endpoint-pool.js';
import type { EndpointEntry } from './endpoint-entry.js';
import type { LoadProbeStats } from './http-load-prober.js';

/**
 * Where an endpoint stands:
 * - `eligible`: receives new requests;
 * - `ejected`: outlier detection keeps it out for now;
 * - `draining`: removed, not ready, or terminating while another is ready — in-flight requests
 *   and connections are finishing, no new request goes to it;
 * - `not-ready`: known to discovery, not eligible, nothing open to it.
 */
export type EndpointState = 'eligible' | 'ejected' | 'draining' | 'not-ready';

export interface EndpointStats {
  /** `ip:port`. */
  readonly key: string;
  readonly address: string;
  readonly port: number;
  readonly zone?: string;
  /** The Pod name, when discovery knows it. */
  readonly pod?: string;
  readonly state: EndpointState;
  /** Discovery's `ready` condition (last known, for an endpoint that left the set). */
  readonly ready: boolean;
  /** Discovery's `terminating` condition (last known, for an endpoint that left the set). */
  readonly terminating: boolean;
  /** Requests sent to this endpoint, ever (while it was known). */
  readonly requests: number;
  /** Requests sent within the stats window. */
  readonly windowRequests: number;
  readonly inFlight: number;
  /** Requests that ended in a 5xx or a transport failure. */
  readonly errors: number;
  /** Peak-EWMA latency estimate, ms. */
  readonly latencyMs: number;
  /** Open connections to this endpoint (HTTP/2 sessions, TCP connections), whichever transport opened them. */
  readonly openConnections: number;
  readonly idleConnections: number;
  /** Sockets opened to this endpoint, ever. */
  readonly connectionsOpened: number;
  /** Requests waiting for a connection (connection cap reached). */
  readonly queued: number;
  /** Outlier detection's back-off level: ejections since its last long healthy spell (not a total). */
  readonly timesEjected: number;
  /** Slow-start multiplier on its weight now, (0, 1]; 1 when not ramping (or not picked). */
  readonly slowStartWeight: number;
  /** Relative weight in the current picker (slow start, herding guard, zone preference applied); 0 = not picked. */
  readonly pickWeight: number;
  /** True while the herding guard caps its share. */
  readonly guarded: boolean;
  /** Load reports recorded from its responses, ever (policies that read reports). */
  readonly loadReports: number;
  /** Pushback answers (429, 503, RESOURCE_EXHAUSTED), ever. */
  readonly pushbacks: number;
}

/** Requests per zone within the stats window. */
export interface ZoneStats {
  /** The endpoints' zone; `""` for endpoints without one. */
  readonly zone: string;
  readonly endpoints: number;
  readonly windowRequests: number;
  /** Fraction of the cluster's window requests, 0..1. */
  readonly share: number;
}

export interface ClusterStats {
  readonly name: string;
  readonly target: string;
  readonly mode: 'round-trip' | 'legacy';
  readonly policy: string;
  /** Discovery status: `pending`, `ok`, `not-found` or `degraded`. */
  readonly discovery: 'pending' | 'ok' | 'not-found' | 'degraded';
  /** Requests dispatched to the cluster, ever. */
  readonly requests: number;
  /** Extra attempts made (connect-failure and idempotent retries). */
  readonly retries: number;
  readonly inFlight: number;
  readonly errors: number;
  readonly endpoints: readonly EndpointStats[];
  /** Imbalance of `windowRequests` across eligible (and ejected) endpoints. */
  readonly window: { readonly windowMs: number; readonly imbalance: Imbalance };
  /** Each zone's share of the window's requests (zones sorted by name). */
  readonly zones: readonly ZoneStats[];
  /** Zone routing: the caller's zone, whether it is active, the spill and the loads compared. */
  readonly zoneRouting: ZoneRoutingState;
  /** Load reports on responses: recorded, and ignored as malformed (policies that read reports). */
  readonly loadReports: { readonly recorded: number; readonly ignored: number };
  /** Load probes (policies that read them; all 0 without a prober). */
  readonly loadProbes: LoadProbeStats;
}

/** `ClusterStats.loadProbes` of a cluster that does not probe. */
export const NO_LOAD_PROBES: LoadProbeStats = Object.freeze({
  sent: 0,
  answered: 0,
  failed: 0,
  skipped: 0,
  inFlight: 0,
});

/** What `collectClusterStats` reads from a cluster. */
export interface ClusterStatsInput {
  readonly name: string;
  readonly target: string;
  readonly mode: ClusterStats['mode'];
  readonly policy: string;
  readonly discovery: ClusterStats['discovery'];
  readonly requests: number;
  readonly retries: number;
  readonly windowMs: number;
  readonly bucketMs: number;
  readonly nowMs: number;
  readonly balancer: Balancer;
  readonly entries: ReadonlyMap<string, EndpointEntry>;
  /** The pools of one endpoint. */
  poolsOf(key: string): Iterable<EndpointPool>;
  /** Legacy (Service-keyed) pools, whose connections know their endpoint. */
  readonly pools: Iterable<EndpointPool>;
  /** Connections other transports reported, per endpoint key. */
  readonly externalConnections: ReadonlyMap<string, number>;
  timesEjected(key: string): number;
  readonly loadReports: { readonly recorded: number; readonly ignored: number };
  /** The prober's stats; undefined when the cluster does not probe. */
  readonly loadProbes: LoadProbeStats | undefined;
}

/** Builds the stats snapshot of one cluster. */
export function collectClusterStats(input: ClusterStatsInput): ClusterStats {
  const now = input.nowMs;
  const epoch = Math.floor(now / input.bucketMs);
  const set = input.balancer.endpointSet;
  const eligible = new Set(set.eligible().map((e) => e.key));
  const ejected = input.balancer.ejected;
  const legacyConns = new Map<string, { open: number; idle: number; endpoint: Endpoint }>();
  for (const pool of input.pools) {
    for (const c of pool.connections()) {
      if (c.endpoint === undefined || !c.socketOpen) continue;
      const n = legacyConns.get(c.endpoint.key) ?? { open: 0, idle: 0, endpoint: c.endpoint };
      n.open++;
      if (c.inFlight === 0) n.idle++;
      legacyConns.set(c.endpoint.key, n);
    }
  }
  const keys = new Set<string>([
    ...set.endpoints.map((e) => e.key),
    ...input.entries.keys(),
    ...input.externalConnections.keys(),
    ...legacyConns.keys(),
  ]);
  const weights = new Map(input.balancer.weights().map((w) => [w.key, w]));
  const endpoints: EndpointStats[] = [];
  let inFlight = 0;
  let errors = 0;
  for (const key of keys) {
    const entry = input.entries.get(key);
    const endpoint = set.get(key) ?? entry?.endpoint ?? legacyConns.get(key)?.endpoint;
    if (endpoint === undefined) continue;
    const load = input.balancer.loads.peek(key);
    let open = 0;
    let idle = 0;
    let queued = 0;
    for (const pool of input.poolsOf(key)) {
      for (const c of pool.connections()) {
        if (!c.socketOpen) continue;
        open++;
        if (c.inFlight === 0) idle++;
      }
      queued += pool.queued;
    }
    open += input.externalConnections.get(key) ?? 0;
    const legacy = legacyConns.get(key);
    if (legacy !== undefined) {
      open += legacy.open;
      idle += legacy.idle;
    }
    const state = ejected.has(key)
      ? 'ejected'
      : eligible.has(key)
        ? 'eligible'
        : set.has(key) && open === 0 && (load?.inFlight ?? 0) === 0
          ? 'not-ready'
          : 'draining';
    inFlight += load?.inFlight ?? 0;
    errors += load?.errors ?? 0;
    endpoints.push({
      key,
      address: endpoint.address,
      port: endpoint.port,
      ...(endpoint.zone === undefined ? {} : { zone: endpoint.zone }),
      ...(endpoint.targetRef === undefined ? {} : { pod: endpoint.targetRef.name }),
      state,
      ready: endpoint.conditions.ready,
      terminating: endpoint.conditions.terminating,
      requests: load?.requests ?? 0,
      windowRequests: entry?.window.sum(epoch) ?? 0,
      inFlight: load?.inFlight ?? 0,
      errors: load?.errors ?? 0,
      latencyMs: load === undefined ? 0 : load.latencyMs(now),
      openConnections: open,
      idleConnections: idle,
      connectionsOpened: entry?.connectionsOpened ?? 0,
      queued,
      timesEjected: input.timesEjected(key),
      slowStartWeight: weights.get(key)?.slowStart ?? 1,
      pickWeight: weights.get(key)?.weight ?? 0,
      guarded: weights.get(key)?.guarded ?? false,
      loadReports: load?.reported('reports') ?? 0,
      pushbacks: load?.reported('pushbacks') ?? 0,
    });
  }
  endpoints.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return {
    name: input.name,
    target: input.target,
    mode: input.mode,
    policy: input.policy,
    discovery: input.discovery,
    requests: input.requests,
    retries: input.retries,
    inFlight,
    errors,
    endpoints,
    window: { windowMs: input.windowMs, imbalance: windowImbalance(endpoints) },
    zones: zoneStats(endpoints),
    zoneRouting: input.balancer.zoneState(),
    loadReports: { ...input.loadReports },
    loadProbes: input.loadProbes ?? NO_LOAD_PROBES,
  };
}

/**
 * `ClusterStats.window.imbalance`: the imbalance of `windowRequests` across the endpoints that
 * are eligible or ejected (an ejected endpoint's missing share is part of the picture), and any
 * other endpoint that took requests within the window.
 */
export function windowImbalance(endpoints: readonly EndpointStats[]): Imbalance {
  const counted = endpoints.filter((e) => e.state === 'eligible' || e.state === 'ejected' || e.windowRequests > 0);
  return imbalance(counted.map((e) => e.windowRequests));
}

/** `ClusterStats.zones`: each zone's endpoints and share of `windowRequests`, zones sorted by name. */
export function zoneStats(endpoints: readonly EndpointStats[]): ZoneStats[] {
  const byZone = new Map<string, { endpoints: number; windowRequests: number }>();
  let total = 0;
  for (const e of endpoints) {
    const z = byZone.get(e.zone ?? '') ?? { endpoints: 0, windowRequests: 0 };
    z.endpoints++;
    z.windowRequests += e.windowRequests;
    total += e.windowRequests;
    byZone.set(e.zone ?? '', z);
  }
  return [...byZone.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([zone, z]) => ({ zone, ...z, share: total === 0 ? 0 : z.windowRequests / total }));
}
