/** Kubernetes discovery: `k8s:///` targets from EndpointSlices, with shared list+watch. */
export { Backoff } from './backoff.js';
export { type ResolveInput, type ResolveResult, resolveServiceEndpoints } from './endpoint-slice-resolver.js';
export {
  connectionKey,
  describeConnection,
  type KubeConnectionConfig,
  type KubernetesConnectionOptions,
  resolveKubeConnectionConfig,
  SERVICE_ACCOUNT_DIR,
} from './kube-connection.js';
export type {
  AddressType,
  EndpointSlice,
  EndpointSliceConditions,
  EndpointSliceEndpoint,
  EndpointSlicePort,
  ObjectList,
  ObjectMeta,
  ObjectReference,
  Service,
  ServicePort,
  Status,
  WatchEvent,
  WatchEventType,
} from './kube-objects.js';
export {
  createKubernetesEndpointSource,
  KubernetesEndpointSource,
  type KubernetesSourceOptions,
  type KubernetesTarget,
  kubernetesSourceOptionsSpec,
  parseKubernetesSourceOptions,
} from './kubernetes-endpoint-source.js';
export { defaultKubernetesWatchCache, KubernetesWatchCache, type ServiceWatchLease } from './kubernetes-watch-cache.js';
export type { ReflectorStats, WatchTiming } from './resource-reflector.js';
export { KUBERNETES_API_ACCESS, ServiceWatch, type ServiceWatchState } from './service-watch.js';
