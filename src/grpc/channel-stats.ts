/**
 * Stats of one gRPC channel balanced by the `evenlb` policy: its cluster's stats (`ClusterStats`,
 * the shape of a `BalancedAgent` route) plus each endpoint's subchannel connectivity. A channel
 * has one subchannel (one HTTP/2 connection) per eligible endpoint, counted as its open
 * connection while READY.
 *
 * An eligible endpoint whose subchannel is not connected stays `eligible` (only outlier
 * detection ejects); its `connectivity` tells why it gets no call right now.
 */
import { type ClusterStats, type EndpointStats, NO_LOAD_PROBES } from '../cluster/cluster-stats.js';
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

/**
 * A channel's stats: its cluster's, with each endpoint's connectivity (lower-case grpc-js state
 * names by key).
 */
export function channelStats(cluster: ClusterStats, connectivity: ReadonlyMap<string, string>): ChannelStats {
  const endpoints = cluster.endpoints.map(
    (e): ChannelEndpointStats => ({ ...e, connectivity: connectivity.get(e.key) ?? 'none' }),
  );
  return { ...cluster, endpoints };
}

/** The stats of a channel that has no valid config yet: no policy, no endpoints. */
export function emptyChannelStats(name: string, target: string): ChannelStats {
  return {
    name,
    target,
    mode: 'round-trip',
    policy: 'none',
    discovery: 'pending',
    requests: 0,
    retries: 0,
    inFlight: 0,
    errors: 0,
    endpoints: [],
    window: { windowMs: 60_000, imbalance: imbalance([]) },
    zones: [],
    zoneRouting: { zone: undefined, active: false, spill: 0, localLoadMs: 0, fleetLoadMs: 0 },
    loadReports: { recorded: 0, ignored: 0 },
    loadProbes: NO_LOAD_PROBES,
  };
}
