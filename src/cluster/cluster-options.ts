/**
 * The options of a `Cluster`, declared once and parsed once. `clusterSettingsSpec` holds the
 * tunables a route may override (balancing policy, connection lifetime, retries, outlier
 * detection, TLS, protocol); the `BalancedAgent` accepts the same fields as agent-wide
 * defaults and per route, so one spec validates all three places.
 */
import type { BalancerOptions } from '../balancing/balancer.js';
import { DEFAULT_LOAD_PATH, isLoadPath, LOAD_PATH_EXPECTED } from '../balancing/load-document.js';
import { outlierDetectionSpec } from '../balancing/outlier-detector.js';
import { herdingGuardSpec } from '../balancing/shaping/herding-guard.js';
import { pushbackSpec } from '../balancing/shaping/pushback-penalty.js';
import { zoneRoutingSpec } from '../balancing/shaping/zone-preference.js';
import { type Clock, isClock } from '../core/clock.js';
import type { FeatureGates } from '../core/feature-gates.js';
import { type Input, opt, type Parsed, parseOptions } from '../core/options.js';
import type { Random } from '../core/random.js';
import type { EndpointSource } from '../discovery/endpoint-source.js';
import type { CloseReason } from '../pool/lifetime-policy.js';
import type { RequestOutcome, RetryReason } from './retry-policy.js';

export type { RequestOutcome } from './retry-policy.js';

export type PemInput = string | Buffer | readonly (string | Buffer)[];

const isPem = (v: unknown): v is PemInput =>
  typeof v === 'string' ||
  Buffer.isBuffer(v) ||
  (Array.isArray(v) && v.every((x) => typeof x === 'string' || Buffer.isBuffer(x)));

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** TLS settings for HTTPS endpoints. The server name defaults to the request's host name, never an IP. */
export const clusterTlsSpec = {
  /** Trusted CA certificates (PEM); default: Node's bundled roots. */
  ca: opt.custom<PemInput, { optional: true }>('PEM text, a Buffer or an array of them', isPem, { optional: true }),
  /** Client certificate chain (PEM), for mutual TLS. */
  cert: opt.custom<PemInput, { optional: true }>('PEM text, a Buffer or an array of them', isPem, { optional: true }),
  /** Client private key (PEM), for mutual TLS. */
  key: opt.custom<PemInput, { optional: true }>('PEM text, a Buffer or an array of them', isPem, { optional: true }),
  /** TLS server name (SNI and certificate check); default: the host name of the request's authority. */
  servername: opt.string({ nonEmpty: true, optional: true }),
  /** Verify the server certificate; default true. */
  rejectUnauthorized: opt.boolean({ default: true }),
};

export type ClusterTlsOptions = Parsed<typeof clusterTlsSpec>;

/** Options of a cluster's load probes (`ClusterOptions.loadProbes`). */
export const loadProbesSpec = {
  /** Port the endpoints serve their load document on (`reportLoad`'s `loadPort`); default each endpoint's own port. */
  port: opt.int({ min: 1, max: 65535, optional: true }),
  /** Path of the load document; default `/.well-known/evenlb/load`. */
  path: opt.custom<string, { default: string }>(LOAD_PATH_EXPECTED, isLoadPath, { default: DEFAULT_LOAD_PATH }),
  /** A probe without an answer within this long has failed, ms; default 500. */
  timeoutMs: opt.number({ min: 1, max: 60_000, default: 500 }),
  /** Probes in flight at once, at most; default 4. */
  maxConcurrent: opt.int({ min: 1, max: 256, default: 4 }),
  /** Probes waiting for their turn, at most (more are skipped); default 64. */
  maxQueued: opt.int({ min: 0, max: 10_000, default: 64 }),
  /** Probe over HTTPS with the cluster's `tls` settings (a load document served by an HTTPS server on its own port); default false. */
  tls: opt.boolean({ default: false }),
};

/** Load probe options as parsed. */
export type LoadProbeOptions = Parsed<typeof loadProbesSpec>;

/** Tunables shared by `ClusterOptions`, `BalancedAgentOptions` and per-route options. */
export const clusterSettingsSpec = {
  /** Balancing policy name (`least-request`, `round-robin`, ...); default `least-request`. */
  policy: opt.string({ nonEmpty: true, default: 'least-request' }),
  /** The policy's own options, validated by the policy. */
  policyOptions: opt.custom<unknown, { optional: true }>('policy options', (_v): _v is unknown => true, {
    optional: true,
  }),
  /** Slow start: ramp a newly ready endpoint's weight over this many ms (Envoy's formula); unset/0 = off. */
  slowStartMs: opt.number({ min: 0, optional: true }),
  /** Slow-start curve (Envoy's `aggression`); default 1 (linear). */
  slowStartAggression: opt.number({ min: 0, exclusiveMin: true, optional: true }),
  /** Slow-start weight floor, percent of the endpoint's weight; default 10. */
  slowStartMinWeightPercent: opt.number({ min: 0, max: 100, optional: true }),
  /**
   * Herding guard for least-request / peak-ewma (`maxShareMultiple`, `minResponses`, `seedLatency`;
   * `herdingGuardSpec`), or `false`; default on.
   */
  herdingGuard: opt.object(herdingGuardSpec, { optional: true, orFalse: true }),
  /**
   * The pushback penalty: an endpoint answering 429, 503 or gRPC RESOURCE_EXHAUSTED gets
   * `factor` times less weight, fading over `windowMs` (`pushbackSpec`; defaults 10 and
   * 5,000 ms), or `false`; default on, for every policy but the hash policies.
   */
  pushback: opt.object(pushbackSpec, { optional: true, orFalse: true }),
  /**
   * Load-aware zone routing (`zone`, `mode`, `loadBand`, `probePercent`, `maxSpillPercent`;
   * `zoneRoutingSpec`). The caller's zone defaults to the `EVENLB_ZONE` environment variable.
   */
  zoneRouting: opt.object(zoneRoutingSpec, { optional: true }),
  /** Requests per connection before it is retired (exactly); unset = unlimited. */
  maxRequestsPerConnection: opt.int({ min: 1, optional: true }),
  /** Connection age limit in ms, jittered by `ageJitter`; unset = unlimited. */
  maxConnectionAgeMs: opt.number({ min: 0, exclusiveMin: true, optional: true }),
  /** Jitter fraction for `maxConnectionAgeMs` (0..0.5); default 0.1. */
  ageJitter: opt.number({ min: 0, max: 0.5, default: 0.1 }),
  /** Close a connection idle this long (ms); unset = undici's keep-alive rules. */
  idleTimeoutMs: opt.number({ min: 0, exclusiveMin: true, optional: true }),
  /** Connections per endpoint (per Service in legacy mode); unset = unlimited. */
  connectionsPerEndpoint: opt.int({ min: 1, optional: true }),
  /** TCP + TLS connect timeout in ms; default 10 s. */
  connectTimeoutMs: opt.number({ min: 0, exclusiveMin: true, default: 10_000 }),
  /** undici `headersTimeout` in ms; default undici's (300 s). */
  headersTimeoutMs: opt.number({ min: 0, optional: true }),
  /** undici `bodyTimeout` in ms; default undici's (300 s). */
  bodyTimeoutMs: opt.number({ min: 0, optional: true }),
  /** Passive outlier detection options (`outlierDetectionSpec`), or `false` to turn it off; default on with defaults. */
  outlierDetection: opt.object(outlierDetectionSpec, { optional: true, orFalse: true }),
  /**
   * Extra attempts for idempotent requests (GET, HEAD, OPTIONS, PUT, DELETE, TRACE) with a
   * replayable body after a transport error or a `retryOn` status, each on another endpoint;
   * default 0. An idempotent request whose kept-alive connection failed before any answer is
   * retried once whatever this says (see `RetryPolicy`).
   */
  retryIdempotent: opt.int({ min: 0, max: 10, default: 0 }),
  /** Extra endpoints tried, whatever the method, when a connection cannot be made (nothing was sent); default 1. */
  retryConnectFailures: opt.int({ min: 0, max: 10, default: 1 }),
  /** Statuses that count as a failed attempt for `retryIdempotent`; default [502, 503, 504]. */
  retryOn: opt.custom<readonly number[], { default: readonly number[] }>(
    'an array of HTTP status codes 500..599',
    (v): v is readonly number[] => Array.isArray(v) && v.every((s) => Number.isInteger(s) && s >= 500 && s <= 599),
    { default: [502, 503, 504] },
  ),
  /** TLS settings for `https:` origins. */
  tls: opt.object(clusterTlsSpec, { optional: true }),
  /**
   * Load probes for policies that read them (`prequal`): where endpoints serve their load
   * document (`port`, `path`), `timeoutMs`, `maxConcurrent`, `maxQueued`, `tls`
   * (`loadProbesSpec`); `false` switches probing off (the policy falls back). Default on, asking
   * each endpoint's own port at `/.well-known/evenlb/load`.
   */
  loadProbes: opt.object(loadProbesSpec, { optional: true, orFalse: true }),
  /** Offer h2 in ALPN to HTTPS endpoints; default false (http/1.1 only, as kube-apiserver does for Services). */
  allowH2: opt.boolean({ default: false }),
  /** Speak HTTP/2 with prior knowledge to `http:` endpoints (h2c, e.g. gRPC); default false. */
  h2c: opt.boolean({ default: false }),
  /** Streams per HTTP/2 connection; default 100. */
  maxConcurrentStreams: opt.int({ min: 1, default: 100 }),
  /** How long a request waits for discovery's first answer (ms) before `EVENLB_DISCOVERY_PENDING`; default 5 s. */
  discoveryTimeoutMs: opt.number({ min: 0, default: 5_000 }),
  /** Sliding window for per-endpoint request counts and imbalance figures (ms); default 60 s. */
  statsWindowMs: opt.number({ min: 10, default: 60_000 }),
  /** Feature gates (`RoundTripLoadBalancing=false` selects the legacy host-keyed pool). */
  featureGates: opt.custom<
    string | Record<string, unknown> | FeatureGates,
    { optional: true },
    string | Record<string, boolean> | FeatureGates
  >(
    'a feature gate string "Name=true,..." or an object',
    (v): v is string | Record<string, unknown> | FeatureGates => typeof v === 'string' || isObject(v),
    { optional: true },
  ),
};

/** What a cluster reports as requests end and connections come and go (metrics hook into this). */
export interface ClusterObserver {
  requestEnded?(cluster: string, endpoint: string, outcome: RequestOutcome, durationMs: number): void;
  retried?(cluster: string, reason: RetryReason): void;
  connectionOpened?(cluster: string, endpoint: string): void;
  connectionClosed?(cluster: string, endpoint: string, reason: CloseReason): void;
  ejected?(cluster: string, endpoint: string, durationMs: number): void;
  /** The endpoint pushed back (answered 429, 503 or RESOURCE_EXHAUSTED). */
  pushback?(cluster: string, endpoint: string): void;
  /** A response's load report was recorded (`recorded` true) or ignored as malformed (policies that read reports). */
  loadReport?(cluster: string, endpoint: string, recorded: boolean): void;
  /** A load probe was sent, answered, failed, or skipped (its queue was full, or the endpoint left). */
  loadProbe?(cluster: string, endpoint: string, result: LoadProbeResult): void;
}

/** What became of a load probe (`ClusterObserver.loadProbe`). */
export type LoadProbeResult = 'sent' | 'answered' | 'failed' | 'skipped';

const isRandom = (v: unknown): v is Random =>
  isObject(v) && typeof v.next === 'function' && typeof v.int === 'function';
const isSource = (v: unknown): v is EndpointSource =>
  isObject(v) && typeof v.snapshot === 'function' && typeof v.subscribe === 'function';

/** True for an object that implements `EndpointSource`. */
export const isEndpointSource = isSource;

/** Options only a whole cluster (not a route override) takes. */
export const clusterOnlySpec = {
  /** Time source for timers, ages and windows; default the system clock (tests pass a `ManualClock`). */
  clock: opt.custom<Clock, { optional: true }>('a Clock', isClock, { optional: true }),
  /** Randomness for picks and jitter; default an unseeded `Random` (tests pass a seeded one). */
  random: opt.custom<Random, { optional: true }>('a Random', isRandom, { optional: true }),
  /** Options for endpoint sources created from target URIs (dns/file/k8s tuning). */
  sourceOptions: opt.custom<Record<string, unknown>, { optional: true }>('an object', isObject, { optional: true }),
  /** Callbacks as requests end and connections come and go (metrics hook in here). */
  observer: opt.custom<ClusterObserver, { optional: true }>('an object of observer callbacks', isObject, {
    optional: true,
  }),
};

export const clusterOptionsSpec = {
  /** Name for stats, metrics and errors (the route, e.g. `webhook.policy.svc:443`). */
  name: opt.string({ nonEmpty: true }),
  /** A target URI (`static:///`, `dns:///`, `file:///`, `k8s:///`) or an `EndpointSource`. */
  target: opt.custom<string | EndpointSource, Record<string, never>>(
    'a target URI string or an EndpointSource',
    (v): v is string | EndpointSource => typeof v === 'string' || isSource(v),
  ),
  /** `Host` header value when the request has none; default: the request origin's host. */
  authority: opt.string({ nonEmpty: true, optional: true }),
  ...clusterSettingsSpec,
  ...clusterOnlySpec,
};

/** Cluster options as parsed: frozen, every default filled in. */
export interface ParsedClusterOptions extends Parsed<typeof clusterOptionsSpec> {}

/**
 * Input accepted by `new Cluster(...)`, derived from `clusterOptionsSpec` (each field's meaning
 * and default is the TSDoc of its spec entry).
 */
export interface ClusterOptions extends Input<typeof clusterOptionsSpec> {}

/** The settings part of `ClusterOptions` (agent defaults and per-route overrides), from `clusterSettingsSpec`. */
export interface ClusterSettings extends Input<typeof clusterSettingsSpec> {}

/**
 * The Balancer options of a cluster's settings (policy, its options, slow start, herding guard,
 * zone routing) on the given clock and random source — shared by every transport's Balancer.
 */
export function balancerOptions(
  o: Pick<ParsedClusterOptions, 'policy' | 'policyOptions'> & Parameters<typeof balancerShaping>[0],
  clock: Clock,
  random: Random,
): BalancerOptions {
  return { policy: o.policy, policyOptions: o.policyOptions, clock, random, ...balancerShaping(o) };
}

/**
 * The `Balancer` options a cluster's settings give: slow start, herding guard and zone
 * routing, with the caller's zone from `env.EVENLB_ZONE` when not configured. Nested option
 * objects are validated by the Balancer (errors name `Balancer herdingGuard` / `zoneRouting`).
 */
export function balancerShaping(
  o: Pick<
    ParsedClusterOptions,
    'slowStartMs' | 'slowStartAggression' | 'slowStartMinWeightPercent' | 'herdingGuard' | 'zoneRouting' | 'pushback'
  >,
  env: Readonly<Record<string, string | undefined>> = process.env,
): {
  slowStart: Record<string, number>;
  herdingGuard?: Record<string, unknown> | false;
  zoneRouting: Record<string, unknown>;
  pushback?: Record<string, unknown> | false;
} {
  const slowStart: Record<string, number> = {};
  if (o.slowStartMs !== undefined) slowStart.windowMs = o.slowStartMs;
  if (o.slowStartAggression !== undefined) slowStart.aggression = o.slowStartAggression;
  if (o.slowStartMinWeightPercent !== undefined) slowStart.minWeightPercent = o.slowStartMinWeightPercent;
  const envZone = env.EVENLB_ZONE;
  const zoneRouting: Record<string, unknown> = { ...(o.zoneRouting ?? {}) };
  if (zoneRouting.zone === undefined && envZone !== undefined && envZone !== '') zoneRouting.zone = envZone;
  return {
    slowStart,
    ...(o.herdingGuard === undefined ? {} : { herdingGuard: o.herdingGuard }),
    zoneRouting,
    ...(o.pushback === undefined ? {} : { pushback: o.pushback }),
  };
}

/** Parses cluster options once (unknown keys rejected). */
export function parseClusterOptions(input: unknown): ParsedClusterOptions {
  const name = isObject(input) && typeof input.name === 'string' ? input.name : '?';
  return parseOptions(`cluster ${name}`, input, clusterOptionsSpec);
}
