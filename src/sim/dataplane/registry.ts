/**
 * Every dataplane the simulator knows, by name: kube-proxy's modes (`iptables`, `nftables`,
 * `ipvs-rr`, `ipvs-lc`, `ipvs-sh`), the apiserver's webhook client before and after the
 * round-trip fix (`apiserver-legacy`, `apiserver-roundtrip`), and `evenlb:<policy>` for every
 * balancing policy in the registry — a policy registered anywhere shows up here without a
 * change to the simulator.
 */
import { ensureBuiltinPolicies } from '../../balancing/policies/index.js';
import { type BalancingPolicy, registeredPolicies } from '../../balancing/policy.js';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import { HostKeyedPoolRouter } from './apiserver/host-keyed-pool-router.js';
import { RoundTripPicker } from './apiserver/round-trip-picker.js';
import type { DataplaneModel } from './dataplane.js';
import { BalancerPicker, checkLoadRecords } from './evenlb/balancer-picker.js';
import { IptablesScheduler, NftablesScheduler } from './kube-proxy/iptables-scheduler.js';
import { type IpvsAlgorithm, IpvsScheduler } from './kube-proxy/ipvs-scheduler.js';
import { PinnedConnectionsRouter } from './kube-proxy/pinned-connections-router.js';
import { PerRequestRouter } from './per-request-router.js';

const ipvs = (algorithm: IpvsAlgorithm, description: string): DataplaneModel => ({
  name: `ipvs-${algorithm}`,
  description,
  granularity: 'connection',
  policyKind: undefined,
  createRouter: (ctx) => new PinnedConnectionsRouter(ctx, new IpvsScheduler(algorithm, ctx.scenario.clients.nodes)),
});

const fixedDataplanes: readonly DataplaneModel[] = [
  {
    name: 'iptables',
    description: 'kube-proxy iptables: rule i of N matches with probability 1/(N-i); pinned per connection',
    granularity: 'connection',
    policyKind: undefined,
    createRouter: (ctx) => new PinnedConnectionsRouter(ctx, new IptablesScheduler(ctx.streams.dataplane)),
  },
  {
    name: 'nftables',
    description: 'kube-proxy nftables: numgen random mod N per new connection',
    granularity: 'connection',
    policyKind: undefined,
    createRouter: (ctx) => new PinnedConnectionsRouter(ctx, new NftablesScheduler(ctx.streams.dataplane)),
  },
  ipvs('rr', 'kube-proxy IPVS round robin, state per node'),
  ipvs('lc', 'kube-proxy IPVS least connections, counting only the node’s own connections'),
  ipvs('sh', 'kube-proxy IPVS source hashing by client address'),
  {
    name: 'apiserver-legacy',
    description: 'apiserver webhook client, idle pool keyed by Service host; endpoint chosen only when dialling',
    granularity: 'pool',
    policyKind: undefined,
    createRouter: (ctx) => new HostKeyedPoolRouter(ctx),
  },
  {
    name: 'apiserver-roundtrip',
    description: 'apiserver webhook client with round-trip balancing: random ready endpoint per request',
    granularity: 'request',
    policyKind: undefined,
    createRouter: (ctx) => new PerRequestRouter(ctx, new RoundTripPicker(ctx)),
  },
];

function evenlbDataplane(policy: BalancingPolicy): DataplaneModel {
  return {
    name: `evenlb:${policy.name}`,
    description: `evenlb Balancer, policy ${policy.name}: ${policy.description}`,
    granularity: 'request',
    policyKind: policy.kind,
    createRouter: (ctx) => new PerRequestRouter(ctx, new BalancerPicker(ctx, policy.name, policy.kind)),
    check: (scenario) => checkLoadRecords(scenario, `evenlb:${policy.name}`, policy.kind),
  };
}

/** Every dataplane, kube-proxy and apiserver models first, then one per registered policy. */
export function listDataplanes(): readonly DataplaneModel[] {
  ensureBuiltinPolicies();
  return [...fixedDataplanes, ...registeredPolicies().map(evenlbDataplane)];
}

/**
 * The dataplanes named in `names`, in that order. An unknown name is an
 * `EVENLB_INVALID_OPTION` error listing the known ones.
 *
 * @example
 * resolveDataplanes(['iptables', 'evenlb:least-request'])
 */
export function resolveDataplanes(names: readonly string[]): readonly DataplaneModel[] {
  const all = listDataplanes();
  return names.map((name) => {
    const found = all.find((d) => d.name === name);
    if (found === undefined) {
      throw new EvenlbError(
        ErrorCodes.INVALID_OPTION,
        `unknown dataplane ${JSON.stringify(name)}; known dataplanes: ${all.map((d) => d.name).join(', ')}`,
        { details: { field: 'dataplanes', dataplane: name } },
      );
    }
    return found;
  });
}
