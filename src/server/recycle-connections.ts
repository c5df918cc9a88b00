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
import { ConnectionRegistry, type ConnectionStats } from './connection-registry.js';
import { type ParsedRecyclerOptions, parseRecyclerOptions, type RecyclerOptions } from './recycler-options.js';

const COMPONENT = 'recycleConnections';

/** The handle `recycleConnections` returns. */
export interface ConnectionRecycler {
  /** The validated options, frozen. */
  readonly options: ParsedRecyclerOptions;
  /** Counters since the server was first tracked (shared with `drain`). */
  stats(): ConnectionStats;
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
  let closed = false;
  return Object.freeze({
    options: settings.options,
    stats: () => registry.stats(),
    close: async () => {
      if (closed) return;
      closed = true;
      registry.unconfigure(owner);
      registry.release();
    },
  });
}
