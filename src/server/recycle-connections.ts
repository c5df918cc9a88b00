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
  if (settings.fairShare !== undefined) {
    if (
      settings.fairShare.options.loadPort === undefined &&
      (registry.kind === 'h2c' || registry.kind === 'h2-secure')
    ) {
      registry.unconfigure(owner);
      registry.release();
      throw new EvenlbError(
        ErrorCodes.INVALID_OPTION,
        `${COMPONENT}: option "fairShare.loadPort" must be set for an HTTP/2 server (the load exchange is plain HTTP/1.1 on its own port); received undefined`,
        { details: { component: COMPONENT, field: 'fairShare.loadPort' } },
      );
    }
    const metricsRegistry = settings.options.metrics?.registry;
    shedder = new FairShareShedder(
      registryShedderHost(registry),
      settings.fairShare,
      settings.clock,
      settings.random,
      metricsRegistry === undefined ? undefined : new FairShareMetrics(metricsRegistry),
    );
    const s = shedder;
    registry.loadResponder = (req, res) => s.answer(req, res);
    s.start();
  }
  let closing: Promise<void> | undefined;
  return Object.freeze({
    options: settings.options,
    stats: () => registry.stats(),
    fairShare: () => shedder?.stats(),
    close: () => {
      closing ??= (async () => {
        if (shedder !== undefined) registry.loadResponder = undefined;
        registry.unconfigure(owner);
        registry.release();
        await shedder?.close();
      })();
      return closing;
    },
  });
}
