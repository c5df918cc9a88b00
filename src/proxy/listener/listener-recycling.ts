/**
 * Downstream recycling for one L7 listener (`listeners[].recycle`): clients reconnect — and
 * land, through kube-proxy, on another proxy replica — when their connection reaches a request
 * count or an age, or when this replica carries more than its fair share of the fleet's load.
 *
 * A listener's clients arrive on three paths: the proxy's own HTTP/1.1 data path
 * (`Http1Downstream`), node:http for the few requests handed off to it, and node:http2 for h2
 * clients. The age and request limits drive the data path's `LifetimePolicy` and the server
 * recycler on the two node servers. Fair-share shedding is the one `FairShareShedder` the
 * server recycler uses, over all three paths: data-path connections retire with
 * `Connection: close` on a response, h2 sessions with GOAWAY. Its load exchange runs on its
 * own port (`fairShare.loadPort`, plain HTTP): peers are asked at their address on that port.
 * When the listener also reports its load, that one document carries the probe figures too.
 * While the same peers target lists this replica as terminating, every connection is retired
 * the same graceful way (`TerminatingHandover`): its clients move before SIGTERM cuts them.
 */
import type http from 'node:http';
import type http2 from 'node:http2';
import type { Logger } from 'pino';
import type { ProbeAnswer } from '../../balancing/load-document.js';
import type { Clock } from '../../core/clock.js';
import { parseOptions } from '../../core/options.js';
import type { Random } from '../../core/random.js';
import { FairShareMetrics } from '../../metrics/fair-share-metrics.js';
import type { ProxyMetrics } from '../../metrics/proxy-metrics.js';
import { LifetimePolicy } from '../../pool/lifetime-policy.js';
import { ConnectionRegistry } from '../../server/connection-registry.js';
import { fairShareSettings, fairShareSpec } from '../../server/fair-share/fair-share-options.js';
import {
  FairShareShedder,
  type FairShareStats,
  type SheddableConnection,
  type ShedderHost,
} from '../../server/fair-share/fair-share-shedder.js';
import { LoadEndpoint } from '../../server/load/load-endpoint.js';
import { type ConnectionRecycler, recycleConnections } from '../../server/recycle-connections.js';
import { type ListenerConfig, listenerRecycleLimitsSpec } from '../config/config-schema.js';
import type { Http1Downstream } from '../http1/downstream-connection.js';
import { TerminatingHandover } from './terminating-handover.js';

export interface ListenerRecyclingDeps {
  /** The node:http server requests are handed off to. */
  readonly h1: http.Server;
  /** The node:http2 server h2 sessions are served by. */
  readonly h2: http2.Http2Server;
  /** The data path's open connections. */
  readonly downstreams: ReadonlySet<Http1Downstream>;
  readonly metrics: ProxyMetrics;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly random: Random;
  /** The listener's bound port (0 before it listens). */
  readonly port: () => number;
  /** True once the listener is closing: nothing is shed. */
  readonly draining: () => boolean;
  /**
   * The listener's load-probe figures (`loadReport`), added to the fair-share load document;
   * undefined when the listener does not report its load.
   */
  readonly probe: (() => ProbeAnswer) | undefined;
}

/** A data-path connection as the shedder sees it (one per connection: the meter keys on it). */
class DownstreamCandidate implements SheddableConnection {
  readonly #conn: Http1Downstream;
  #retiring: string | undefined;

  constructor(conn: Http1Downstream) {
    this.#conn = conn;
  }

  get requests(): number {
    return this.#conn.requests;
  }

  get inFlight(): number {
    return this.#conn.busy ? 1 : 0;
  }

  /** Closed data-path connections leave the listener's set: a candidate seen is open. */
  get closed(): boolean {
    return false;
  }

  get retiring(): string | undefined {
    return this.#retiring;
  }

  retire(reason: 'fair-share'): void {
    this.#retiring ??= reason;
    this.#conn.retire();
  }
}

const COMPONENT = 'proxy listener recycle';

/** Retires every open connection that is not retiring yet (a terminating replica's hand-over); returns how many. */
function retireAll(host: ShedderHost): number {
  let n = 0;
  for (const c of host.connections()) {
    if (c.closed || c.retiring !== undefined) continue;
    c.retire('fair-share');
    n++;
  }
  return n;
}
const RECYCLE_LIMITS = Object.keys(listenerRecycleLimitsSpec) as (keyof typeof listenerRecycleLimitsSpec)[];

export class ListenerRecycling {
  /** The data path's age/request limits; undefined when neither is set. */
  readonly policy: LifetimePolicy | undefined;
  readonly #deps: ListenerRecyclingDeps;
  readonly #recyclers: ConnectionRecycler[] = [];
  readonly #registries: ConnectionRegistry[] = [];
  readonly #candidates = new WeakMap<Http1Downstream, DownstreamCandidate>();
  readonly #shedder: FairShareShedder | undefined;
  readonly #handover: TerminatingHandover | undefined;
  /** The load document when it also carries probe figures (else the shedder serves its own). */
  readonly #document: LoadEndpoint | undefined;
  /** Requests of data-path connections that have closed (the total must never decrease). */
  #closedRequests = 0;
  #closing: Promise<void> | undefined;

  constructor(config: ListenerConfig, deps: ListenerRecyclingDeps) {
    this.#deps = deps;
    const recycle = config.recycle;
    // The limits the file set, by the recycler's own names (`listenerRecycleLimitsSpec`).
    const limits: Record<string, unknown> = {};
    for (const k of RECYCLE_LIMITS) if (recycle?.[k] !== undefined) limits[k] = recycle[k];
    if (Object.keys(limits).length > 0) {
      const options = { ...limits, clock: deps.clock, random: deps.random };
      this.#recyclers.push(recycleConnections(deps.h1, options), recycleConnections(deps.h2, options));
      this.policy = new LifetimePolicy(limits, deps.random, `listeners.${config.name}.recycle`);
    }
    if (recycle?.fairShare !== undefined) {
      // Validated when the configuration was loaded; parsed here into the shedder's settings.
      const options = parseOptions(
        `listeners.${config.name}.recycle.fairShare`,
        { ...recycle.fairShare, logger: deps.logger },
        fairShareSpec,
      );
      const h1 = ConnectionRegistry.acquire(deps.h1, COMPONENT);
      const h2 = ConnectionRegistry.acquire(deps.h2, COMPONENT);
      this.#registries.push(h1, h2);
      const host = this.#host(config, h1, h2);
      this.#handover = new TerminatingHandover({
        peers: options.peers,
        discovery: options.discovery,
        self: options.self,
        clock: deps.clock,
        port: () => deps.port() || undefined,
        retireAll: () => retireAll(host),
      });
      const probe = deps.probe;
      const shedder = new FairShareShedder(
        host,
        fairShareSettings(options),
        deps.clock,
        deps.random,
        new FairShareMetrics(deps.metrics.registry),
        probe === undefined,
      );
      this.#shedder = shedder;
      if (probe !== undefined && options.loadPort !== undefined) {
        // One document for peers and load probes, on the fair-share load port.
        const place = { path: options.loadPath, port: options.loadPort, host: options.loadHost };
        this.#document = new LoadEndpoint(place, true, deps.logger);
        this.#document.attach({ peer: () => shedder.report() });
        this.#document.attach({ probe });
      }
    }
  }

  /** Starts fair-share decisions (once the listener is bound: its port identifies it). */
  start(): void {
    this.#shedder?.start();
    this.#handover?.start();
  }

  /** A data-path connection closed: its requests stay in the total. */
  released(conn: Http1Downstream): void {
    this.#closedRequests += conn.requests;
  }

  /** What fair-share shedding has seen and done; undefined when it is not configured. */
  fairShare(): FairShareStats | undefined {
    return this.#shedder?.stats();
  }

  /** Stops shedding only (the load-exchange port closes); idempotent. */
  async stopShedding(): Promise<void> {
    await Promise.all([this.#shedder?.close(), this.#handover?.close(), this.#document?.close()]);
  }

  /** Stops recycling and shedding (the load exchange port closes). Always settles; idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (const r of this.#registries.splice(0)) r.release();
      await Promise.all([
        ...this.#recyclers.map((r) => r.close()),
        this.#shedder?.close(),
        this.#handover?.close(),
        this.#document?.close(),
      ]);
    })();
    return this.#closing;
  }

  #host(config: ListenerConfig, h1: ConnectionRegistry, h2: ConnectionRegistry): ShedderHost {
    const deps = this.#deps;
    const candidate = (conn: Http1Downstream): DownstreamCandidate => {
      let c = this.#candidates.get(conn);
      if (c === undefined) {
        c = new DownstreamCandidate(conn);
        this.#candidates.set(conn, c);
      }
      return c;
    };
    const self = this;
    return {
      get port() {
        return deps.port() || undefined;
      },
      tls: config.protocol === 'https',
      get draining() {
        return deps.draining();
      },
      get requestsTotal() {
        let n = self.#closedRequests + h1.requestsTotal + h2.requestsTotal;
        for (const c of deps.downstreams) n += c.requests;
        return n;
      },
      *connections() {
        for (const c of deps.downstreams) yield candidate(c);
        yield* h1.connections();
        yield* h2.connections();
      },
    };
  }
}
