/** Balancing: the Balancer, pickers, load tracking and the policy registry. */
export * from './balancer.js';
export * from './endpoint-load.js';
export * from './picker.js';
export { builtinPolicies, ensureBuiltinPolicies } from './policies/index.js';
export * from './policy.js';
