/**
 * Kubernetes discovery: `k8s:///` targets from EndpointSlices, with shared list+watch.
 * Importing this module registers the `k8s` scheme with `createEndpointSource`.
 */
import { registerEndpointSourceFactory } from '../create-endpoint-source.js';
import { kubernetesEndpointSourceFactory } from './kubernetes-endpoint-source.js';

export {
  type ResolveInput as KubernetesResolveInput,
  type ResolveResult as KubernetesResolveResult,
  resolveServiceEndpoints,
} from './endpoint-slice-resolver.js';
export {
  type KubeConnectionConfig,
  type KubernetesConnectionOptions,
  resolveKubeConnectionConfig,
  SERVICE_ACCOUNT_DIR,
} from './kube-connection.js';
export type {
  EndpointSlice as KubeEndpointSlice,
  Service as KubeService,
  Status as KubeStatus,
  WatchEvent as KubeWatchEvent,
} from './kube-objects.js';
export {
  createKubernetesEndpointSource,
  KubernetesEndpointSource,
  type KubernetesSourceOptions,
  type KubernetesTarget,
  kubernetesEndpointSourceFactory,
  kubernetesSourceOptionsSpec,
  parseKubernetesSourceOptions,
} from './kubernetes-endpoint-source.js';
export { defaultKubernetesWatchCache, KubernetesWatchCache, type ServiceWatchLease } from './kubernetes-watch-cache.js';
export type {
  ReflectorStats as KubernetesWatchStats,
  WatchTiming as KubernetesWatchTiming,
} from './reflector-options.js';
export { KUBERNETES_API_ACCESS } from './service-watch.js';

registerEndpointSourceFactory('k8s', kubernetesEndpointSourceFactory);
