/**
 * One configured upstream cluster as the proxy sees it: the endpoint source following its
 * target URI, the shared `Balancer` fed with every snapshot, and the upstream transport — an
 * `EndpointDispatcher` for HTTP/1.1 (undici pools keyed by endpoint) or an `H2SessionPool` for
 * HTTP/2 and gRPC. It also answers "why can nothing be picked" for 503 responses
 * (`no-endpoints`, `none-ready`, `all-ejected`, `service-not-found`, `discovery-pending`).
 */
import { readFileSync } from 'node:fs';
import { Balancer } from '../balancing/balancer.js';
import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import { createRandom, type Random } from '../core/random.js';
import type { EndpointSource } from '../discovery/endpoint-source.js';
import { H2SessionPool } from '../pool/h2-session-pool.js';
import { LifetimePolicy } from '../pool/lifetime-policy.js';
import type { ClusterConfig } from './config-schema.js';
import { type DispatchObserver, EndpointDispatcher } from './endpoint-dispatcher.js';
import { openEndpointSource } from './open-endpoint-source.js';

export interface ProxyClusterOptions {
  readonly clock?: Clock;
  readonly random?: Random;
  readonly observer?: DispatchObserver;
  /** An endpoint source to use instead of opening one for `config.target` (tests, embedding). */
  readonly source?: EndpointSource;
}

export class ProxyCluster {
  readonly name: string;
  readonly config: ClusterConfig;
  readonly source: EndpointSource;
  readonly balancer: Balancer;
  readonly http1: EndpointDispatcher | undefined;
  readonly h2: H2SessionPool | undefined;
  readonly #unsubscribe: () => void;
  #closed = false;

  constructor(config: ClusterConfig, options: ProxyClusterOptions = {}) {
    this.name = config.name;
    this.config = config;
    const clock = options.clock ?? systemClock;
    const random = options.random ?? createRandom();
    this.balancer = new Balancer({
      policy: config.policy,
      ...(config.policyOptions === undefined ? {} : { policyOptions: config.policyOptions }),
      clock,
      random,
    });
    this.source = options.source ?? openEndpointSource(config.target);
    this.balancer.update(this.source.snapshot().endpoints);
    this.#unsubscribe = this.source.subscribe((snap) => this.balancer.update(snap.endpoints));
    const ca = config.tls?.ca === undefined ? undefined : readFileSync(config.tls.ca);
    const tls =
      config.tls === undefined
        ? undefined
        : {
            rejectUnauthorized: config.tls.rejectUnauthorized,
            ...(ca === undefined ? {} : { ca }),
            ...(config.tls.servername === undefined ? {} : { servername: config.tls.servername }),
          };
    if (config.protocol === 'h2') {
      this.http1 = undefined;
      this.h2 = new H2SessionPool({
        balancer: this.balancer,
        lifetime: new LifetimePolicy(config.lifetime ?? {}, random, `clusters.${config.name}.lifetime`),
        connectTimeoutMs: config.connectTimeoutMs,
        connectRetries: config.retries.connectFailures,
        clock,
        ...(tls === undefined ? {} : { tls }),
      });
    } else {
      this.h2 = undefined;
      this.http1 = new EndpointDispatcher(config.name, {
        balancer: this.balancer,
        connectTimeoutMs: config.connectTimeoutMs,
        headersTimeoutMs: config.requestTimeoutMs,
        bodyTimeoutMs: config.bodyTimeoutMs,
        connectRetries: config.retries.connectFailures,
        maxRequestsPerConnection: config.lifetime?.maxRequestsPerConnection,
        keepAliveTimeoutMs: config.lifetime?.idleTimeoutMs,
        ...(tls === undefined ? {} : { tls }),
        ...(options.observer === undefined ? {} : { observer: options.observer }),
      });
    }
  }

  /** Resolves when discovery has answered once (or the source closed). */
  ready(): Promise<void> {
    return this.source.ready();
  }

  /**
   * Why no request can be sent now, or undefined when an endpoint can be picked. Cheap: reads
   * the current picker and discovery status.
   */
  unavailableReason(): string | undefined {
    if (this.balancer.picker.endpoints.length > 0) return undefined;
    const status = this.source.snapshot().status;
    if (status.state === 'not-found') return 'service-not-found';
    if (status.state === 'pending') return 'discovery-pending';
    const set = this.balancer.endpointSet;
    if (set.size === 0) return 'no-endpoints';
    return set.eligible().length === 0 ? 'none-ready' : 'all-ejected';
  }

  /** Stops discovery and lets open upstream requests finish. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe();
    await Promise.all([this.source.close(), this.http1?.close(), this.h2?.close()]);
  }

  async destroy(err?: Error): Promise<void> {
    this.#closed = true;
    this.#unsubscribe();
    await Promise.all([this.source.close(), this.http1?.destroy(err), this.h2?.destroy(err)]);
  }
}
