/**
 * `recycleConnections`: make a server close its clients' connections after N requests or an
 * age, so clients behind kube-proxy reconnect — and land on a fresh random endpoint — without
 * changing the clients. kube-proxy balances connections, not requests: with a few long-lived
 * keep-alive or HTTP/2 connections the load stays where the connections were first placed,
 * and pods added by a rolling update or a scale-out get nothing. Closing is always graceful:
 * HTTP/1 at a response boundary with `Connection: close`, HTTP/2 with GOAWAY; nothing in
 * flight is cut unless `graceMs` runs out.
 */
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { FairShareMetrics } from '../metrics/fair-share-metrics.js';
import { ConnectionRegistry, type ConnectionStats } from './connection-registry.js';
import { FairShareShedder, type FairShareStats } from './fair-share/fair-share-shedder.js';
import { registryShedderHost } from './fair-share/registry-shedder-host.js';
import { attachLoadDocument } from './load/load-endpoint.js';
import { type ParsedRecyclerOptions, parseRecyclerOptions, type RecyclerOptions } from './recycler-options.js';

const COMPONENT = 'recycleConnections';

/** The handle `recycleConnections` returns. */
export interface ConnectionRecycler {
  /** The validated options, frozen. */
  readonly options: ParsedRecyclerOptions;
  /** Counters since the server was first tracked (shared with `drain`). */
  stats(): ConnectionStats;
  /** What fair-share shedding has seen and done; undefined when `fairShare` is not set. */
  fairShare(): FairShareStats | undefined;
  /**
   * Detaches: open connections are no longer limited (those already closing still close).
   * Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Recycles the connections of a `node:http`, `node:https` or `node:http2` server (h2c, TLS, and
 * `createSecureServer({ allowHTTP1: true })`). For Express pass `app.listen()`'s return value,
 * for Fastify `fastify.server`, for Koa `app.listen()`'s return value.
 *
 * @example
 * import http from 'node:http';
 * import { Registry } from 'prom-client';
 * import { recycleConnections } from 'evenlb/server';
 *
 * const server = http.createServer(handler);
 * const recycler = recycleConnections(server, {
 *   maxRequestsPerConnection: 1000,
 *   maxConnectionAgeMs: 5 * 60_000, // ±10% jitter per connection
 *   graceMs: 30_000,
 *   metrics: { registry: new Registry() },
 * });
 * server.listen(8080);
 */
export function recycleConnections(server: unknown, options: RecyclerOptions = {}): ConnectionRecycler {
  const settings = parseRecyclerOptions(options);
  const registry = ConnectionRegistry.acquire(server, COMPONENT);
  const owner = {};
  if (!registry.configure(owner, settings)) {
    registry.release();
    throw new EvenlbError(
      ErrorCodes.INVALID_OPTION,
      `${COMPONENT}: this server already has a connection recycler; close() it before attaching another`,
      { details: { component: COMPONENT, field: 'server' } },
    );
  }
  let shedder: FairShareShedder | undefined;
  let detachLoad: (() => Promise<void>) | undefined;
  const fairShare = settings.fairShare;
  if (fairShare !== undefined) {
    const metricsRegistry = settings.options.metrics?.registry;
    let s: FairShareShedder | undefined;
    try {
      // The load document (peers ask it, and so do load probes when the server reports its load).
      detachLoad = attachLoadDocument(
        registry,
        { peer: () => (s as FairShareShedder).report() },
        {
          component: COMPONENT,
          fields: { port: 'fairShare.loadPort', path: 'fairShare.loadPath' },
          port: fairShare.options.loadPort,
          host: fairShare.options.loadHost,
          path: fairShare.options.loadPath,
          defaultPath: fairShare.options.loadPath,
          logger: fairShare.options.logger,
        },
      );
    } catch (err) {
      registry.unconfigure(owner);
      registry.release();
      throw err;
    }
    s = new FairShareShedder(
      registryShedderHost(registry),
      fairShare,
      settings.clock,
      settings.random,
      metricsRegistry === undefined ? undefined : new FairShareMetrics(metricsRegistry),
      false,
    );
    shedder = s;
    s.start();
  }
  let closing: Promise<void> | undefined;
  return Object.freeze({
    options: settings.options,
    stats: () => registry.stats(),
    fairShare: () => shedder?.stats(),
    close: () => {
      closing ??= (async () => {
        const detached = detachLoad?.();
        registry.unconfigure(owner);
        registry.release();
        await Promise.all([shedder?.close(), detached]);
      })();
      return closing;
    },
  });
}
