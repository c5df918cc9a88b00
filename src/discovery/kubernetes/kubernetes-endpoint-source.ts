/**
 * `k8s:///name.namespace:port` targets: an `EndpointSource` that follows a Service's
 * EndpointSlices like kube-proxy does. Sources for the same Service share one list+watch (see
 * `KubernetesWatchCache`); each applies its own port selection on top of the shared copy and
 * publishes only when its endpoint set really changes. Status follows the discovery contract:
 * `not-found` when the Service (or the named port) does not exist, `ok` with an empty set when
 * it has zero endpoints, and `degraded` with the last known set while the API server is
 * unreachable, refuses the credentials or misbehaves; both recover by themselves.
 */
import type { Clock } from '../../core/clock.js';
import { isClock, systemClock } from '../../core/clock.js';
import { describeValue, ErrorCodes, EvenlbError } from '../../core/errors.js';
import { opt, type Parsed, parseOptions } from '../../core/options.js';
import { createRandom, type Random } from '../../core/random.js';
import { parseTarget, type Target } from '../../core/target.js';
import type { EndpointSourceOptions } from '../create-endpoint-source.js';
import { BaseEndpointSource } from '../endpoint-source.js';
import { resolveServiceEndpoints } from './endpoint-slice-resolver.js';
import { KubeApiClient } from './kube-api-client.js';
import {
  connectionKey,
  describeConnection,
  KubeConnection,
  type KubeConnectionConfig,
  type KubernetesConnectionOptions,
  resolveKubeConnectionConfig,
  SERVICE_ACCOUNT_DIR,
} from './kube-connection.js';
import { isRecord } from './kube-objects.js';
import {
  acquireServiceWatch,
  defaultKubernetesWatchCache,
  KubernetesWatchCache,
  type ServiceWatchLease,
} from './kubernetes-watch-cache.js';
import { callerZoneHint, lookupNodeZone } from './node-zone.js';
import { DEFAULT_LIST_PAGE_SIZE, type ReflectorStats, type WatchTiming } from './reflector-options.js';
import { ServiceWatch } from './service-watch.js';

export type KubernetesTarget = Extract<Target, { scheme: 'k8s' }>;

/** Options of `createKubernetesEndpointSource`. Every field is optional. */
export interface KubernetesSourceOptions {
  /** An explicit API server (highest precedence). */
  readonly connection?: KubernetesConnectionOptions;
  /** A kubeconfig file to use instead of `KUBECONFIG` / `~/.kube/config`. */
  readonly kubeconfig?: string;
  /** A kubeconfig context other than the current one. */
  readonly context?: string;
  /** Where the pod's service-account `token` and `ca.crt` are; default the standard mount. */
  readonly serviceAccountDir?: string;
  /** Environment to read `KUBECONFIG`, `KUBERNETES_SERVICE_HOST/PORT` and `HOME` from; default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** First reconnect delay (ms), default 1000; doubles per failure with jitter. */
  readonly backoffBaseMs?: number;
  /** Longest reconnect delay (ms), default 30000. */
  readonly backoffMaxMs?: number;
  /**
   * Restart a watch silent (no event, no bookmark) this long (ms), default 90000: the API server
   * sends a bookmark about once a minute, so a black-holed watch is caught within 90 s.
   */
  readonly watchIdleTimeoutMs?: number;
  /**
   * Server-side watch timeout (s), default 300: each watch asks for a random 1–2× this (5–10
   * minutes by default) and is then resumed from its last resourceVersion.
   */
  readonly watchTimeoutSeconds?: number;
  /** Deadline of a LIST and of a watch's response headers (ms), default 30000. */
  readonly requestTimeoutMs?: number;
  /** Objects per LIST page (the `limit` query parameter), default 500; `continue` is followed to the end. */
  readonly listPageSize?: number;
  readonly clock?: Clock;
  readonly random?: Random;
  /** Receives warnings (an FQDN slice skipped); default `process.emitWarning`. */
  readonly onWarning?: (message: string) => void;
  /** The shared-watch cache; default the process-wide one. */
  readonly cache?: KubernetesWatchCache;
}

const isFunction = (v: unknown): v is (message: string) => void => typeof v === 'function';
const isRandom = (v: unknown): v is Random =>
  isRecord(v) && typeof v.next === 'function' && typeof v.int === 'function';
const isEnv = (v: unknown): v is Readonly<Record<string, string | undefined>> =>
  isRecord(v) && Object.values(v).every((x) => x === undefined || typeof x === 'string');
const isServerUrl = (v: unknown): v is string => {
  if (typeof v !== 'string') return false;
  try {
    const u = new URL(v);
    return (u.protocol === 'https:' || u.protocol === 'http:') && u.hostname !== '';
  } catch {
    return false;
  }
};

const COMPONENT = 'KubernetesEndpointSource';

export const kubernetesSourceOptionsSpec = {
  connection: opt.object(
    {
      server: opt.custom('an http(s) URL such as https://10.96.0.1:443', isServerUrl),
      token: opt.string({ nonEmpty: true, optional: true }),
      tokenFile: opt.string({ nonEmpty: true, optional: true }),
      ca: opt.string({ nonEmpty: true, optional: true }),
      insecureSkipTlsVerify: opt.boolean({ default: false }),
    },
    { optional: true },
  ),
  kubeconfig: opt.string({ nonEmpty: true, optional: true }),
  context: opt.string({ nonEmpty: true, optional: true }),
  serviceAccountDir: opt.string({ nonEmpty: true, default: SERVICE_ACCOUNT_DIR }),
  env: opt.custom('an object of environment variables (strings)', isEnv, { optional: true }),
  backoffBaseMs: opt.number({ min: 0, exclusiveMin: true, default: 1000 }),
  backoffMaxMs: opt.number({ min: 0, exclusiveMin: true, default: 30_000 }),
  watchIdleTimeoutMs: opt.number({ min: 0, exclusiveMin: true, default: 90_000 }),
  watchTimeoutSeconds: opt.int({ min: 1, default: 300 }),
  requestTimeoutMs: opt.number({ min: 0, exclusiveMin: true, default: 30_000 }),
  listPageSize: opt.int({ min: 1, default: DEFAULT_LIST_PAGE_SIZE }),
  clock: opt.custom('a Clock ({ now, setTimeout })', isClock, { optional: true }),
  random: opt.custom('a Random ({ next, int })', isRandom, { optional: true }),
  onWarning: opt.custom('a function', isFunction, { optional: true }),
  cache: opt.custom(
    'a KubernetesWatchCache',
    (v: unknown): v is KubernetesWatchCache => v instanceof KubernetesWatchCache,
    { optional: true },
  ),
};

export type ParsedKubernetesSourceOptions = Parsed<typeof kubernetesSourceOptionsSpec>;

/** Validates options once; errors name the field, what was expected and what was received. */
export function parseKubernetesSourceOptions(input: unknown): ParsedKubernetesSourceOptions {
  const o = parseOptions(COMPONENT, input, kubernetesSourceOptionsSpec);
  if (o.backoffMaxMs < o.backoffBaseMs) {
    throw new EvenlbError(
      ErrorCodes.INVALID_OPTION,
      `${COMPONENT}: option "backoffMaxMs" must be >= backoffBaseMs (${o.backoffBaseMs}); received ${o.backoffMaxMs}`,
      { details: { component: COMPONENT, field: 'backoffMaxMs' } },
    );
  }
  if (o.connection !== undefined && o.connection.token !== undefined && o.connection.tokenFile !== undefined) {
    throw new EvenlbError(
      ErrorCodes.INVALID_OPTION,
      `${COMPONENT}: options "connection.token" and "connection.tokenFile" are exclusive; give one`,
      { details: { component: COMPONENT, field: 'connection.tokenFile' } },
    );
  }
  return o;
}

// Sources share a watch only when they use the same clock and random (by identity).
const identities = new WeakMap<object, number>();
let nextIdentity = 1;
function identity(object: object): number {
  let id = identities.get(object);
  if (id === undefined) {
    id = nextIdentity++;
    identities.set(object, id);
  }
  return id;
}

let sharedRandom: Random | undefined;

export class KubernetesEndpointSource extends BaseEndpointSource {
  readonly namespace: string;
  readonly name: string;
  readonly port: number | string;
  /** Where the API server configuration came from, for logs. */
  readonly connection: string;
  readonly #lease: ServiceWatchLease;
  readonly #unsubscribe: () => void;
  readonly #onWarning: (message: string) => void;
  readonly #warnedSlices = new Set<string>();
  /** The caller's zone from its node's label (`NODE_NAME`), once looked up. */
  #callerZone: string | undefined;
  #zoneLookup: AbortController | undefined;
  readonly #warn: ((message: string) => void) | undefined;

  /** Use `createKubernetesEndpointSource`. */
  constructor(target: KubernetesTarget, options: ParsedKubernetesSourceOptions) {
    super(target.uri);
    this.namespace = target.namespace;
    this.name = target.name;
    this.port = target.port;
    const config: KubeConnectionConfig = resolveKubeConnectionConfig({
      connection: options.connection,
      kubeconfig: options.kubeconfig,
      context: options.context,
      serviceAccountDir: options.serviceAccountDir,
      env: options.env ?? process.env,
    });
    this.connection = describeConnection(config);
    this.#warn = options.onWarning;
    this.#onWarning =
      options.onWarning ??
      ((message) => process.emitWarning(message, { type: 'EvenlbWarning', code: 'EVENLB_FQDN_SLICE_SKIPPED' }));
    const clock = options.clock ?? systemClock;
    sharedRandom ??= createRandom();
    const random = options.random ?? sharedRandom;
    const timing: WatchTiming = {
      backoffBaseMs: options.backoffBaseMs,
      backoffMaxMs: options.backoffMaxMs,
      watchIdleTimeoutMs: options.watchIdleTimeoutMs,
      watchTimeoutSeconds: options.watchTimeoutSeconds,
      requestTimeoutMs: options.requestTimeoutMs,
    };
    const key = [
      connectionKey(config),
      `${target.namespace}/${target.name}`,
      JSON.stringify(timing),
      `limit=${options.listPageSize}`,
      `clock#${identity(clock)}`,
      `random#${identity(random)}`,
    ].join(' ');
    const cache = options.cache ?? defaultKubernetesWatchCache;
    this.#lease = acquireServiceWatch(
      cache,
      key,
      () =>
        new ServiceWatch({
          connection: config,
          namespace: target.namespace,
          name: target.name,
          clock,
          random,
          timing,
          listPageSize: options.listPageSize,
        }),
    );
    this.#unsubscribe = this.#lease.watch.subscribe(() => this.#update());
    this.#update();
    const hint = callerZoneHint(options.env ?? process.env);
    if (hint.nodeName !== undefined) this.#lookUpZone(config, hint.nodeName, options.requestTimeoutMs ?? 30_000);
  }

  /** The caller's zone from its node's label, when `NODE_NAME` is set and the lookup succeeded. */
  get callerZone(): string | undefined {
    return this.#callerZone;
  }

  /** Reads the node's zone label once; the next published set carries it. A failure is a warning. */
  #lookUpZone(config: KubeConnectionConfig, nodeName: string, timeoutMs: number): void {
    const abort = new AbortController();
    this.#zoneLookup = abort;
    const connection = new KubeConnection(config);
    const signal = AbortSignal.any([abort.signal, AbortSignal.timeout(timeoutMs)]);
    lookupNodeZone(new KubeApiClient(connection), nodeName, signal)
      .then((zone) => {
        if (zone === undefined || this.closed) return;
        this.#callerZone = zone;
        this.#update();
      })
      .catch((err: unknown) => {
        if (abort.signal.aborted) return;
        const message = `${this.target}: zone routing has no caller zone: ${(err as Error).message}`;
        if (this.#warn !== undefined) this.#warn(message);
        else process.emitWarning(message, { type: 'EvenlbWarning', code: 'EVENLB_CALLER_ZONE_UNKNOWN' });
      })
      .finally(() => {
        this.#zoneLookup = undefined;
        connection.close().catch(() => {});
      });
  }

  /** Counters of the shared list+watch (LISTs, 410 re-lists, watches, silent restarts, failures). */
  stats(): { readonly endpointSlices: ReflectorStats; readonly service: ReflectorStats } {
    return this.#lease.watch.stats();
  }

  #update(): void {
    if (this.closed) return;
    const state = this.#lease.watch.state();
    const resolved =
      state.synced && state.service !== undefined
        ? resolveServiceEndpoints({
            namespace: this.namespace,
            name: this.name,
            service: state.service,
            slices: state.slices.values(),
            port: this.port,
            ...(this.#callerZone === undefined ? {} : { callerZone: this.#callerZone }),
          })
        : undefined;
    if (resolved?.type === 'endpoints') this.#warnFqdn(resolved.skippedFqdnSlices);
    const current = this.snapshot();
    if (state.failure !== undefined) {
      // Discovery is failing: keep serving what is known. Objects in the shared copy are the
      // last ones the API server sent, so a set computed from them is still "last known".
      const endpoints = resolved?.type === 'endpoints' ? resolved.endpoints : current.endpoints;
      // Both watches failing for one cause (the API server is down) is one failure to report.
      const same =
        current.status.state === 'degraded' &&
        current.status.error.message === state.failure.message &&
        current.endpoints.equals(endpoints);
      if (!same) this.publishFailure(state.failure, endpoints);
      return;
    }
    if (resolved === undefined) return; // Still pending.
    if (resolved.type === 'not-found') {
      const same = current.status.state === 'not-found' && current.status.error.message === resolved.error.message;
      if (!same) this.publishNotFound(resolved.error);
      return;
    }
    this.publishEndpoints(resolved.endpoints);
  }

  #warnFqdn(names: readonly string[]): void {
    for (const slice of names) {
      if (this.#warnedSlices.has(slice)) continue;
      this.#warnedSlices.add(slice);
      this.#onWarning(
        `${this.target}: skipping EndpointSlice ${this.namespace}/${slice}: addressType FQDN is not supported ` +
          '(evenlb balances over IP addresses)',
      );
    }
  }

  protected async onClose(): Promise<void> {
    this.#zoneLookup?.abort();
    this.#unsubscribe();
    await this.#lease.release();
  }
}

/**
 * Follows a Kubernetes Service's endpoints for one port.
 *
 * @example
 * const source = createKubernetesEndpointSource('k8s:///webhook.policy:443');
 * await source.ready();
 * source.subscribe(({ endpoints, status }) => console.log(status.state, endpoints.size));
 *
 * @example
 * // A local or test API server:
 * createKubernetesEndpointSource('k8s:///web.default:http', {
 *   connection: { server: 'http://127.0.0.1:6443', token: 'dev' },
 *   backoffBaseMs: 50,
 * });
 */
export function createKubernetesEndpointSource(
  target: KubernetesTarget | string,
  options?: KubernetesSourceOptions,
): KubernetesEndpointSource {
  const parsedTarget = typeof target === 'string' ? parseTarget(target) : target;
  if (!isRecord(parsedTarget) || parsedTarget.scheme !== 'k8s') {
    const uri =
      isRecord(parsedTarget) && typeof parsedTarget.uri === 'string' ? parsedTarget.uri : describeValue(target);
    throw new EvenlbError(
      ErrorCodes.INVALID_TARGET,
      `${COMPONENT}: target ${uri} is not a k8s:/// target; expected k8s:///NAME.NAMESPACE:PORT or k8s:///NAME.NAMESPACE:PORT_NAME`,
      { details: { target: uri } },
    );
  }
  return new KubernetesEndpointSource(parsedTarget, parseKubernetesSourceOptions(options));
}

/**
 * The `k8s` factory for `createEndpointSource`: reads `options.kubernetes` (the same fields as
 * `KubernetesSourceOptions`) and the shared `options.clock`.
 */
export function kubernetesEndpointSourceFactory(
  target: Target,
  options: EndpointSourceOptions,
): KubernetesEndpointSource {
  const own = options.kubernetes;
  const merged =
    own === undefined || isRecord(own)
      ? { ...(own ?? {}), ...(options.clock !== undefined && own?.clock === undefined ? { clock: options.clock } : {}) }
      : own;
  return createKubernetesEndpointSource(target as KubernetesTarget, merged as KubernetesSourceOptions);
}
