/**
 * evenlb — even load across Kubernetes pods, whatever the connections do.
 *
 * The public API, chosen name by name: what users program against — the balancing clients
 * (`BalancedAgent`, `createHttpAgent`, `createWebhookClient`) and the `Cluster` under them,
 * endpoint sources and their factory registry, the `Balancer` and the policy registry, errors
 * and their codes, feature gates, clock and random (to make tests deterministic), and the
 * metric names. Everything else (pools, handlers, option specs, parsers) is internal and may
 * change without notice. Every type a signature here mentions is exported too.
 *
 * Importing the root loads undici and the engine, nothing more: prom-client only when metrics
 * are asked for, pino only when a source logs, @kubernetes/client-node (an optional peer) only
 * to read a kubeconfig. The proxy (`evenlb/proxy`), the connection recycler (`evenlb/server`)
 * and the gRPC plugin (`evenlb/grpc`) have their own entry points.
 *
 * `etc/evenlb.api.txt` lists every exported name; `test/api/public-api.test.ts` fails when this
 * file and that report disagree, so each change of the API shows up in review.
 */

// ---- Balancing engine and policy registry ----
export { Balancer, type BalancerOptions, type EndpointWeightState } from './balancing/balancer.js';
export { EndpointLoad, type LoadOptions, type LoadTracker } from './balancing/endpoint-load.js';
export { formatLoadReport, LOAD_REPORT_HEADER, type LoadReport, parseLoadReport } from './balancing/load-report.js';
export type { OutlierDetectionOptions } from './balancing/outlier-detector.js';
export type {
  NonePicked,
  NoneReason,
  PickContext,
  Picked,
  Picker,
  PickFn,
  PickResult,
  TrackedEndpoint,
} from './balancing/picker.js';
export { ensureBuiltinPolicies } from './balancing/policies/index.js';
export {
  type BalancingPolicy,
  getPolicy,
  type LoadProber,
  type LoadSignal,
  type PickerBuilder,
  type PolicyEnv,
  type ReportedWeights,
  registeredPolicies,
  registerPolicy,
} from './balancing/policy.js';
export type { ReportedLoad, ReportFieldName } from './balancing/reported-load.js';
export type { PushbackOptions } from './balancing/shaping/pushback-penalty.js';
export type { ZoneRoutingState } from './balancing/shaping/zone-preference.js';
// ---- Balancing clients ----
export { BalancedAgent, type BalancedAgentOptions, type BalancedAgentStats } from './client/balanced-agent.js';
export type { RouteOptions, RouteSpec, RoutingOptions, RoutingStats } from './client/client-routes.js';
export { type BalancedHttpAgent, type BalancedHttpAgentOptions, createHttpAgent } from './client/http-agent.js';
export {
  createWebhookClient,
  type WebhookCallOptions,
  type WebhookClient,
  type WebhookClientConfig,
  type WebhookClientOptions,
} from './client/webhook-client.js';
export { Cluster } from './cluster/cluster.js';
export type {
  ClusterObserver,
  ClusterOptions,
  ClusterSettings,
  ClusterTlsOptions,
  LoadProbeResult,
  ParsedClusterOptions,
  PemInput,
  RequestOutcome,
} from './cluster/cluster-options.js';
export type { ClusterStats, EndpointState, EndpointStats, ZoneStats } from './cluster/cluster-stats.js';
export type { LoadProbeStats } from './cluster/http-load-prober.js';
export type {
  AttemptFailure,
  RetryPolicy,
  RetryPolicyOptions,
  RetryReason,
  RetryState,
} from './cluster/retry-policy.js';
// ---- Errors, feature gates, time and randomness ----
export { type Clock, ManualClock, systemClock, type TimerHandle } from './core/clock.js';
// ---- Endpoints and discovery ----
export {
  createEndpoint,
  type Endpoint,
  type EndpointConditions,
  type EndpointInput,
  type TargetRef,
} from './core/endpoint.js';
export { EndpointSet, type EndpointSetDiff, type EndpointSetMeta } from './core/endpoint-set.js';
export { type ErrorCode, ErrorCodes, EvenlbError, isEvenlbError } from './core/errors.js';
export { type FeatureGateName, FeatureGates, knownFeatureGates } from './core/feature-gates.js';
export { createRandom, type Random, SeededRandom } from './core/random.js';
export { parseTarget, type Target, type TargetScheme } from './core/target.js';
export {
  createEndpointSource,
  type EndpointSourceFactory,
  type EndpointSourceOptions,
  registerEndpointSourceFactory,
} from './discovery/create-endpoint-source.js';
export type { DiscoveryLogger } from './discovery/discovery-logger.js';
export { DnsEndpointSource, type DnsEndpointSourceOptions } from './discovery/dns-endpoint-source.js';
export {
  BaseEndpointSource,
  type DiscoverySnapshot,
  type DiscoveryStatus,
  type EndpointSource,
} from './discovery/endpoint-source.js';
export { FileEndpointSource, type FileEndpointSourceOptions } from './discovery/file-endpoint-source.js';
// Also registers the k8s:/// scheme with createEndpointSource.
export {
  createKubernetesEndpointSource,
  type KubernetesConnectionOptions,
  KubernetesEndpointSource,
  type KubernetesSourceOptions,
  type KubernetesTarget,
  KubernetesWatchCache,
  type KubernetesWatchStats,
} from './discovery/kubernetes/index.js';
export { StaticEndpointSource } from './discovery/static-endpoint-source.js';
// ---- Metrics ----
export { clientMetricNames, type MetricsRegistry } from './metrics/client-metrics.js';
export { type Imbalance, imbalance } from './metrics/imbalance.js';
export type { CloseReason, LifetimeOptions } from './pool/lifetime-policy.js';
export { version } from './version.js';
