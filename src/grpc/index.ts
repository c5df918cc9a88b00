/**
 * `evenlb/grpc`: per-call balancing for `@grpc/grpc-js` channels with evenlb's discovery and
 * policies. See `registerGrpc` and docs/grpc.md.
 */

export {
  evenlbServiceConfig,
  type GrpcBalancingConfig,
  type GrpcBalancingConfigInput,
  parseGrpcBalancingConfig,
} from './balancing-config.js';
export type { ChannelEndpointStats, ChannelStats, GrpcStats } from './channel-stats.js';
export { type GrpcServerModule, grpcLoadInterceptor } from './grpc-load-interceptor.js';
export type { GrpcModule } from './grpc-module.js';
export { type GrpcRegistration, type GrpcRegistrationOptions, registerGrpc } from './register-grpc.js';
