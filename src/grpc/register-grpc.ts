/**
 * `registerGrpc(grpc, options?)`: plugs evenlb into the application's own `@grpc/grpc-js`
 * module. It registers resolvers for `static:///`, `file:///` and `k8s:///` (and `dns:///` with
 * `dns: true`; otherwise grpc-js keeps its own) and the load-balancing policy `evenlb`, and
 * returns a registration with `stats()` in the shape of `BalancedAgent.stats()`, optional
 * prom-client metrics (`evenlb_client_*`, labelled `client` = the registration's name) and
 * `close()`, which closes the shared endpoint sources.
 *
 * grpc-js registries are per module instance and have no unregister: the registration stays in
 * grpc-js for the life of the process; after `close()` its resolvers fail new resolutions with
 * `EVENLB_CLOSED`. One open registration per module; `registerGrpc` again after `close()`
 * replaces it.
 *
 * @example
 * import * as grpc from '@grpc/grpc-js';
 * import { registerGrpc } from 'evenlb/grpc';
 *
 * const evenlb = registerGrpc(grpc);
 * const client = new EchoClient('k8s:///echo.prod:grpc', grpc.credentials.createInsecure());
 * // every call is balanced by least-request over the Service's ready pods
 * console.log(evenlb.stats().routes[0]?.window.imbalance.maxOverMean);
 */
import type { ClusterObserver } from '../cluster/cluster-options.js';
import { type Clock, systemClock } from '../core/clock.js';
import { describeValue, ErrorCodes, EvenlbError } from '../core/errors.js';
import { opt, parseOptions } from '../core/options.js';
import { createRandom, type Random } from '../core/random.js';
import { ClientMetrics, type MetricsRegistry } from '../metrics/client-metrics.js';
import { EVENLB_POLICY_NAME, EvenlbLoadBalancingConfig, parseGrpcBalancingConfig } from './balancing-config.js';
import type { ChannelStats, GrpcStats } from './channel-stats.js';
import { EvenlbLoadBalancer, type PolicyContext } from './evenlb-load-balancer.js';
import { type ChannelControlHelper, type GrpcModule, isGrpcModule } from './grpc-module.js';
import { createResolverClass } from './grpc-resolver.js';
import { SharedSources } from './shared-sources.js';

export interface GrpcRegistrationOptions {
  /** Label of this registration in stats and metrics; default `grpc`. */
  name?: string;
  /** Policy of the service config evenlb resolvers supply (when the channel sets none); default `least-request`. */
  policy?: string;
  /** That policy's options. */
  policyOptions?: unknown;
  /** Also resolve `dns:///` (and plain `host:port`) targets with evenlb's re-resolving DNS source; default false. */
  dns?: boolean;
  /** `evenlb_client_*` metrics on your prom-client registry. */
  metrics?: { registry: MetricsRegistry };
  /** Options for endpoint sources (`{ dns: {...}, file: {...}, kubernetes: {...} }`). */
  sourceOptions?: Record<string, unknown>;
  clock?: Clock;
  random?: Random;
  /** Receives the same events as a cluster's observer (calls ended, connections, ejections). */
  observer?: ClusterObserver;
}

export interface GrpcRegistration {
  readonly name: string;
  /** Stats of every live `evenlb`-balanced channel, shaped like `BalancedAgent.stats()`. */
  stats(): GrpcStats;
  /** Closes the shared endpoint sources and detaches metrics; idempotent. Close channels first. */
  close(): Promise<void>;
  /** Same as `close()`: a registration holds only sources, which close at once. Idempotent. */
  destroy(): Promise<void>;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const registrationSpec = {
  name: opt.string({ nonEmpty: true, default: 'grpc' }),
  policy: opt.string({ nonEmpty: true, default: 'least-request' }),
  policyOptions: opt.custom<unknown, { optional: true }>('policy options', (_v): _v is unknown => true, {
    optional: true,
  }),
  dns: opt.boolean({ default: false }),
  metrics: opt.custom<{ registry: MetricsRegistry }, { optional: true }>(
    'an object { registry } holding a prom-client Registry',
    (v): v is { registry: MetricsRegistry } => isObject(v) && isObject(v.registry),
    { optional: true },
  ),
  sourceOptions: opt.custom<Record<string, unknown>, { optional: true }>('an object', isObject, { optional: true }),
  clock: opt.custom<Clock, { optional: true }>(
    'a Clock',
    (v): v is Clock => isObject(v) && typeof v.now === 'function' && typeof v.setTimeout === 'function',
    { optional: true },
  ),
  random: opt.custom<Random, { optional: true }>(
    'a Random',
    (v): v is Random => isObject(v) && typeof v.next === 'function' && typeof v.int === 'function',
    { optional: true },
  ),
  observer: opt.custom<ClusterObserver, { optional: true }>('an object of observer callbacks', isObject, {
    optional: true,
  }),
};

const open = new WeakMap<object, GrpcRegistration>();

/**
 * Registers evenlb's resolvers and the `evenlb` policy on `grpc` (your `@grpc/grpc-js` module).
 * Throws `EVENLB_INVALID_OPTION` for a bad option or something that is not the grpc-js module.
 *
 * @example
 * const evenlb = registerGrpc(grpc, { policy: 'peak-ewma', metrics: { registry } });
 * const client = new EchoClient('k8s:///echo.prod:grpc', grpc.credentials.createInsecure());
 * // ... at shutdown: client.close(); await evenlb.close();
 */
export function registerGrpc(grpc: GrpcModule, options: GrpcRegistrationOptions = {}): GrpcRegistration {
  if (!isGrpcModule(grpc)) {
    throw new EvenlbError(
      ErrorCodes.INVALID_OPTION,
      `registerGrpc: "grpc" must be the @grpc/grpc-js module (import * as grpc from '@grpc/grpc-js'); received ${describeValue(grpc)}`,
      { details: { component: 'registerGrpc', field: 'grpc' } },
    );
  }
  const o = parseOptions('registerGrpc', options, registrationSpec);
  const defaultConfig = {
    policy: o.policy,
    ...(o.policyOptions === undefined ? {} : { policyOptions: o.policyOptions }),
  };
  try {
    parseGrpcBalancingConfig(defaultConfig);
  } catch (err) {
    throw new EvenlbError(ErrorCodes.INVALID_OPTION, `registerGrpc: ${(err as Error).message}`, { cause: err });
  }
  if (open.has(grpc)) {
    throw new EvenlbError(
      ErrorCodes.INVALID_OPTION,
      'registerGrpc: this @grpc/grpc-js module already has an open evenlb registration; close it first',
      { details: { component: 'registerGrpc', field: 'grpc' } },
    );
  }
  const clock = o.clock ?? systemClock;
  const sources = new SharedSources(clock, o.sourceOptions);
  const live = new Set<{ stats(): ChannelStats }>();
  let closed = false;
  let closing: Promise<void> | undefined;

  const registration: GrpcRegistration = {
    name: o.name,
    stats: () => ({ name: o.name, routes: [...live].map((lb) => lb.stats()) }),
    close: () => {
      closing ??= shutdown();
      return closing;
    },
    destroy: () => registration.close(),
  };
  const metrics = o.metrics === undefined ? undefined : ClientMetrics.attach(o.metrics.registry, registration);
  const observer = metrics === undefined ? o.observer : metrics.observer(o.name, o.observer);

  async function shutdown(): Promise<void> {
    closed = true;
    if (open.get(grpc) === registration) open.delete(grpc);
    metrics?.detach(registration);
    await sources.close();
  }

  const context: PolicyContext = {
    grpc,
    clock,
    random: o.random ?? createRandom(),
    observer,
    track: (lb, isLive) => {
      if (isLive && !closed) live.add(lb);
      else live.delete(lb);
    },
  };
  const Resolver = createResolverClass({ grpc, sources, defaultConfig, closed: () => closed });
  const E = grpc.experimental;
  for (const scheme of ['static', 'file', 'k8s', ...(o.dns ? ['dns'] : [])]) E.registerResolver(scheme, Resolver);
  E.registerLoadBalancerType(
    EVENLB_POLICY_NAME,
    class extends EvenlbLoadBalancer {
      constructor(helper: ChannelControlHelper) {
        super(helper, context);
      }
    },
    EvenlbLoadBalancingConfig,
  );
  open.set(grpc, registration);
  return registration;
}
