/**
 * Stats of one gRPC channel balanced by the `evenlb` policy, in the shape of a `BalancedAgent`
 * route (`ClusterStats`, built by the same `collectClusterStats`), plus each endpoint's
 * subchannel connectivity. A channel has one subchannel (one HTTP/2 connection) per eligible
 * endpoint, counted as its open connection while READY.
 *
 * The policy keeps endpoints whose subchannel is not READY out of the balancer's picks the way
 * outlier detection keeps ejected ones out; in stats only outlier detection's ejections are
 * `ejected`, and a not-connected eligible endpoint is `eligible` with its `connectivity` telling
 * why it gets no call right now.
 */
import type { Balancer } from '../balancing/balancer.js';
import type { OutlierDetector } from '../balancing/outlier-detector.js';
import { type ClusterStats, collectClusterStats, type EndpointStats } from '../cluster/cluster-stats.js';
import { type EndpointEntry, WINDOW_BUCKETS } from '../cluster/endpoint-entry.js';
import { imbalance } from '../metrics/imbalance.js';

/** One endpoint of a gRPC channel. */
export interface ChannelEndpointStats extends EndpointStats {
  /** The subchannel's grpc-js connectivity (`ready`, `connecting`, `idle`, `transient_failure`), or `none` once released. */
  readonly connectivity: string;
}

/** One gRPC channel, shaped like a `BalancedAgent` route. */
export interface ChannelStats extends ClusterStats {
  readonly endpoints: readonly ChannelEndpointStats[];
}

/** `registration.stats()`: like `BalancedAgent.stats()`, one route per live channel. */
export interface GrpcStats {
  readonly name: string;
  readonly routes: readonly ChannelStats[];
}

export interface ChannelStatsInput {
  readonly name: string;
  readonly target: string;
  readonly policy: string;
  readonly discovery: ClusterStats['discovery'];
  readonly requests: number;
  readonly windowMs: number;
  readonly nowMs: number;
  readonly balancer: Balancer | undefined;
  readonly outlier: OutlierDetector | undefined;
  readonly entries: ReadonlyMap<string, EndpointEntry>;
  /** Subchannel connectivity per endpoint key (lower-case grpc-js state names). */
  readonly connectivity: ReadonlyMap<string, string>;
  /** The lower-case name of READY. */
  readonly ready: string;
}

/** Builds one channel's stats. */
export function collectChannelStats(input: ChannelStatsInput): ChannelStats {
  const balancer = input.balancer;
  if (balancer === undefined) {
    return {
      name: input.name,
      target: input.target,
      mode: 'round-trip',
      policy: input.policy,
      discovery: input.discovery,
      requests: 0,
      retries: 0,
      inFlight: 0,
      errors: 0,
      endpoints: [],
      window: { windowMs: input.windowMs, imbalance: imbalance([]) },
      zones: [],
      zoneRouting: { zone: undefined, active: false, spill: 0, localLoadMs: 0, fleetLoadMs: 0 },
    };
  }
  const external = new Map<string, number>();
  for (const [key, state] of input.connectivity) if (state === input.ready) external.set(key, 1);
  const base = collectClusterStats({
    name: input.name,
    target: input.target,
    mode: 'round-trip',
    policy: input.policy,
    discovery: input.discovery,
    requests: input.requests,
    retries: 0,
    windowMs: input.windowMs,
    bucketMs: input.windowMs / WINDOW_BUCKETS,
    nowMs: input.nowMs,
    balancer,
    entries: input.entries,
    pools: [],
    poolsOf: () => [],
    externalConnections: external,
    timesEjected: (key) => input.outlier?.state(key).timesEjected ?? 0,
  });
  const ejected = input.outlier?.ejected;
  const endpoints = base.endpoints.map(
    (e): ChannelEndpointStats => ({
      ...e,
      state: e.state === 'ejected' && ejected?.has(e.key) !== true ? 'eligible' : e.state,
      connectivity: input.connectivity.get(e.key) ?? 'none',
    }),
  );
  return { ...base, endpoints };
}
