/**
 * The part of `@grpc/grpc-js` evenlb uses, as types. The application passes its own grpc-js
 * module to `registerGrpc` (so resolvers and the policy land in the registries of the one copy
 * its channels use); evenlb never imports grpc-js at run time. Only `import type` here.
 */
import type * as Grpc from '@grpc/grpc-js';

/** The grpc-js module (`import * as grpc from '@grpc/grpc-js'`), as far as evenlb uses it. */
export type GrpcModule = Pick<typeof Grpc, 'experimental' | 'status' | 'connectivityState'>;

export type ChannelControlHelper = Grpc.experimental.ChannelControlHelper;
export type GrpcLoadBalancer = Grpc.experimental.LoadBalancer;
export type LeafLoadBalancer = Grpc.experimental.LeafLoadBalancer;
export type GrpcEndpoint = Grpc.experimental.Endpoint;
export type GrpcPicker = Grpc.experimental.Picker;
export type PickArgs = Grpc.experimental.PickArgs;
export type PickResult = Grpc.experimental.PickResult;
export type GrpcUri = Grpc.experimental.GrpcUri;
export type ResolverListener = Grpc.experimental.ResolverListener;
export type GrpcResolver = Grpc.experimental.Resolver;
export type TypedLoadBalancingConfig = Grpc.experimental.TypedLoadBalancingConfig;
export type StatusOr<T> = Grpc.experimental.StatusOr<T>;
export type ChannelOptions = Grpc.ChannelOptions;
export type ConnectivityState = Grpc.connectivityState;
export type GrpcStatus = Grpc.status;
export type Metadata = Grpc.Metadata;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** True when `v` looks like the grpc-js module (the functions evenlb calls are all there). */
export function isGrpcModule(v: unknown): v is GrpcModule {
  if (!isObject(v) || !isObject(v.experimental) || !isObject(v.status) || !isObject(v.connectivityState)) return false;
  const x = v.experimental;
  return [
    'registerResolver',
    'registerLoadBalancerType',
    'createChildChannelControlHelper',
    'statusOrFromValue',
    'LeafLoadBalancer',
    'QueuePicker',
    'UnavailablePicker',
  ].every((name) => typeof x[name] === 'function');
}
