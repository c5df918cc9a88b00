/**
 * The one place built-in balancing policies are registered. Adding a policy here puts it in
 * the CLI, the proxy config schema, the simulator's `evenlb:<policy>` dataplanes and the
 * conformance suite.
 */
import { type BalancingPolicy, registeredPolicies, registerPolicy } from '../policy.js';
import { leastRequestPolicy } from './least-request/least-request-policy.js';
import { roundRobinPolicy } from './round-robin/round-robin-policy.js';

export const builtinPolicies: readonly BalancingPolicy[] = [
  roundRobinPolicy as BalancingPolicy,
  leastRequestPolicy as BalancingPolicy,
];

let registered = false;

/** Registers the built-in policies once; called by `Balancer` and by the public entry point. */
export function ensureBuiltinPolicies(): void {
  if (registered) return;
  registered = true;
  for (const p of builtinPolicies) if (!registeredPolicies().some((r) => r.name === p.name)) registerPolicy(p);
}
