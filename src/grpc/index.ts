/**
 * `evenlb/grpc`: per-call balancing for `@grpc/grpc-js` channels with evenlb's discovery and
 * policies. See `registerGrpc` and docs/grpc.md.
 */

export { grpcOutcome as outcomeOf } from '../cluster/grpc-outcome.js';
export {
  DEFAULT_FAILURE_CODES,
  EVENLB_POLICY_NAME,
  EvenlbLoadBalancingConfig,
  evenlbServiceConfig,
  type GrpcBalancingConfig,
  type GrpcBalancingConfigInput,
  grpcBalancingSpec,
  parseGrpcBalancingConfig,
} from './balancing-config.js';
export type { ChannelEndpointStats, ChannelStats, GrpcStats } from './channel-stats.js';
export type { GrpcModule } from './grpc-module.js';
export { defaultAuthorityOf, evenlbTargetOf, SNAPSHOT_ATTRIBUTE, TARGET_ATTRIBUTE } from './grpc-resolver.js';
export { type GrpcRegistration, type GrpcRegistrationOptions, registerGrpc } from './register-grpc.js';
