/**
 * `BalancedAgent`: an undici `Dispatcher` that balances every request to a Kubernetes Service
 * across its endpoints — the Node.js counterpart of Kubernetes' `WebhookRoundTripLoadBalancing`
 * fix. Requests to a routed origin (`routes: { 'host:port': target }`, or with
 * `kubernetes: true` any `<svc>.<ns>.svc[.<clusterDomain>]:<port>`) go through that route's
 * `Cluster`: an endpoint is picked per request, the request travels to `ip:port` over a pool
 * keyed by that endpoint, `Host` and the TLS server name stay the Service's. Every other
 * origin passes through, untouched, to a plain undici `Agent`.
 *
 * It works wherever undici takes a dispatcher: `undici.request`, `undici.fetch`, Node's global
 * `fetch` after `setGlobalDispatcher(agent)`, and `compose()`d interceptors (both undici
 * handler styles are accepted). Options are parsed once: agent-level values are the defaults,
 * a route object overrides them field by field (`tls` as a whole).
 *
 * @example
 * import { request } from 'undici';
 * import { BalancedAgent } from 'evenlb';
 *
 * const agent = new BalancedAgent({
 *   routes: { 'webhook.policy.svc:443': 'dns:///webhook-headless.policy.svc.cluster.local:8443' },
 *   tls: { ca: caPem },
 *   maxRequestsPerConnection: 100,
 * });
 * const res = await request('https://webhook.policy.svc/validate', { method: 'POST', body, dispatcher: agent });
 * console.log(agent.stats().routes[0]?.window.imbalance.maxOverMean);
 * await agent.close();
 */
import { Agent, Dispatcher } from 'undici';
import type { Cluster } from '../cluster/cluster.js';
import { failHandler } from '../cluster/controller-handler.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { hostPortKey } from '../core/host.js';
import { type Input, opt, parseOptions } from '../core/options.js';
import { Shutdown } from '../core/shutdown.js';
import { ClientRoutes, type RoutingStats, routingSpec } from './client-routes.js';

/** `agent.stats()`: one entry per route that exists so far. */
export type BalancedAgentStats = RoutingStats;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isDispatcher = (v: unknown): v is Dispatcher =>
  isObject(v) && typeof v.dispatch === 'function' && typeof v.close === 'function';

/** The spec of `BalancedAgentOptions`: the routing options, and where unrouted origins go. */
const agentSpec = {
  ...routingSpec,
  /** Where unrouted origins go: a Dispatcher, or options for the plain undici `Agent` created for them. */
  passthrough: opt.custom<Dispatcher | Agent.Options, { optional: true }>(
    'a Dispatcher or undici Agent options',
    isObject,
    { optional: true },
  ),
};

/**
 * Options of `new BalancedAgent(...)`, derived from `agentSpec`: every `RoutingOptions` field
 * and `passthrough` (each field's meaning and default is the TSDoc of its spec entry).
 */
export interface BalancedAgentOptions extends Input<typeof agentSpec> {}

/** Route key of an origin string (`https://svc.ns.svc` → `svc.ns.svc:443`), or undefined. */
function routeKeyOf(origin: string): string | undefined {
  try {
    const url = new URL(origin);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    return hostPortKey(url.hostname, port);
  } catch {
    return undefined;
  }
}

export class BalancedAgent extends Dispatcher {
  readonly name: string;
  readonly #routes: ClientRoutes;
  readonly #passthroughOption: Dispatcher | Agent.Options | undefined;
  /** Origin string → cluster, or null for pass-through; a bounded cache in front of route lookup. */
  readonly #byOrigin = new Map<string, Cluster | null>();
  #passthrough: Dispatcher | undefined;
  readonly #shutdown = new Shutdown();

  constructor(options: BalancedAgentOptions = {}) {
    super();
    const o = parseOptions('BalancedAgent', options, agentSpec);
    this.#passthroughOption = o.passthrough;
    this.#routes = new ClientRoutes(o, 'BalancedAgent', this);
    this.name = this.#routes.name;
  }

  /** Sends a request: through its route's cluster, or to the pass-through agent. */
  override dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    if (this.#shutdown.closed) {
      failHandler(handler, new EvenlbError(ErrorCodes.CLOSED, `BalancedAgent ${this.name} is closed`));
      return true;
    }
    const origin = opts.origin;
    const text = typeof origin === 'string' ? origin : origin === undefined ? '' : origin.origin;
    let cluster = this.#byOrigin.get(text);
    if (cluster === undefined) {
      try {
        cluster = this.#resolve(text);
      } catch (err) {
        failHandler(handler, err as Error);
        return true;
      }
    }
    if (cluster === null) return this.#passthroughDispatcher().dispatch(opts, handler);
    return cluster.dispatch(opts, handler);
  }

  /** The cluster serving `origin` (`https://svc.ns.svc:443`), or undefined when it passes through. */
  clusterFor(origin: string): Cluster | undefined {
    return this.#resolve(origin) ?? undefined;
  }

  /** Routes' clusters so far. */
  clusters(): readonly Cluster[] {
    return this.#routes.clusters();
  }

  /** Stats per route: endpoints, connections, errors, latency, imbalance over the window. */
  stats(): BalancedAgentStats {
    return this.#routes.stats();
  }

  /**
   * Graceful: new requests fail with `EVENLB_CLOSED`, in-flight ones finish, then every route's
   * sockets close. Always settles (after TLS or connect failures too); idempotent.
   */
  override close(): Promise<void>;
  override close(callback: () => void): void;
  override close(callback?: () => void): Promise<void> | void {
    const done = this.#shutdown.close(() => this.#stop(undefined));
    if (callback === undefined) return done;
    done.then(callback, callback);
  }

  /**
   * Abrupt: in-flight and queued requests fail with `err` (default `EVENLB_CLOSED`), sockets are
   * destroyed; also settles a pending `close()` (escalating a shutdown stuck on a hung upstream).
   * Idempotent.
   */
  override destroy(): Promise<void>;
  override destroy(err: Error | null): Promise<void>;
  override destroy(callback: () => void): void;
  override destroy(err: Error | null, callback: () => void): void;
  override destroy(a?: Error | null | (() => void), b?: () => void): Promise<void> | void {
    const err =
      typeof a === 'function' || a === undefined || a === null
        ? new EvenlbError(ErrorCodes.CLOSED, `BalancedAgent ${this.name} was destroyed`)
        : a;
    const callback = typeof a === 'function' ? a : b;
    const done = this.#shutdown.destroy(() => this.#stop(err));
    if (callback === undefined) return done;
    done.then(callback, callback);
  }

  #resolve(origin: string): Cluster | null {
    const cached = this.#byOrigin.get(origin);
    if (cached !== undefined) return cached;
    const key = routeKeyOf(origin);
    const cluster = key === undefined ? null : (this.#routes.lookup(key) ?? null);
    if (this.#byOrigin.size >= 1024) this.#byOrigin.clear();
    this.#byOrigin.set(origin, cluster);
    return cluster;
  }

  #passthroughDispatcher(): Dispatcher {
    if (this.#passthrough === undefined) {
      const p = this.#passthroughOption;
      this.#passthrough = isDispatcher(p) ? p : new Agent(p);
    }
    return this.#passthrough;
  }

  async #stop(err: Error | undefined): Promise<void> {
    const own = isDispatcher(this.#passthroughOption) ? undefined : this.#passthrough;
    await Promise.all([
      this.#routes.close(err, this),
      own === undefined ? undefined : err === undefined ? own.close() : own.destroy(err),
    ]);
  }
}
