/**
 * The one place built-in balancing policies are registered. Adding a policy here puts it in
 * the CLI, the proxy config schema, the simulator's `evenlb:<policy>` dataplanes and the
 * conformance suite.
 */
import { type BalancingPolicy, registeredPolicies, registerPolicy } from '../policy.js';
import { leastRequestPolicy } from './least-request/least-request-policy.js';
import { maglevPolicy } from './maglev/maglev-policy.js';
import { peakEwmaPolicy } from './peak-ewma/peak-ewma-policy.js';
import { prequalPolicy } from './prequal/prequal-policy.js';
import { randomPolicy } from './random/random-policy.js';
import { reportWeightedPolicy } from './report-weighted/report-weighted-policy.js';
import { ringHashPolicy } from './ring-hash/ring-hash-policy.js';
import { roundRobinPolicy } from './round-robin/round-robin-policy.js';
import { sourceHashPolicy } from './source-hash/source-hash-policy.js';
import { weightedRoundRobinPolicy } from './weighted-round-robin/weighted-round-robin-policy.js';

export const builtinPolicies: readonly BalancingPolicy[] = [
  roundRobinPolicy as BalancingPolicy,
  randomPolicy as BalancingPolicy,
  weightedRoundRobinPolicy as BalancingPolicy,
  leastRequestPolicy as BalancingPolicy,
  peakEwmaPolicy as BalancingPolicy,
  ringHashPolicy as BalancingPolicy,
  maglevPolicy as BalancingPolicy,
  sourceHashPolicy as BalancingPolicy,
  // Later additions go last: the order is the CLI's and the simulator's, and recorded figures
  // (test/sim/golden) follow it.
  reportWeightedPolicy as BalancingPolicy,
  prequalPolicy as BalancingPolicy,
];

let registered = false;

/** Registers the built-in policies once; called by `Balancer` and by the public entry point. */
export function ensureBuiltinPolicies(): void {
  if (registered) return;
  registered = true;
  for (const p of builtinPolicies) if (!registeredPolicies().some((r) => r.name === p.name)) registerPolicy(p);
}
