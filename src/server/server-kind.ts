/**
 * Which Node server we were handed, and the protocol-neutral ways to act on it. A server is
 * HTTP/1 (`node:http`, `node:https`) or HTTP/2 (`node:http2`, cleartext h2c or TLS, the latter
 * possibly also serving HTTP/1.1 with `allowHTTP1`). Express, Koa and Fastify expose one of
 * these (`app.listen()`'s return value, `fastify.server`).
 */
import type http from 'node:http';
import type http2 from 'node:http2';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { describeValue, ErrorCodes, EvenlbError } from '../core/errors.js';

/** A server the recycler and drain accept. */
export type RecyclableServer = http.Server | https.Server | http2.Http2Server | http2.Http2SecureServer;

/**
 * - `http1`: `http.Server` (cleartext HTTP/1.1; connections seen on `'connection'`).
 * - `https1`: `https.Server` (connections seen on `'secureConnection'`).
 * - `h2c`: `http2.createServer()` (every connection is an HTTP/2 session).
 * - `h2-secure`: `http2.createSecureServer()` (h2 sessions, plus HTTP/1.1 when `allowHTTP1`).
 */
export type ServerKind = 'http1' | 'https1' | 'h2c' | 'h2-secure';

/** Classifies `server`; throws `EVENLB_INVALID_OPTION` naming `component` for anything else. */
export function serverKind(server: unknown, component: string): ServerKind {
  if (server instanceof net.Server) {
    const isTls = server instanceof tls.Server;
    // Http2Server and Http2SecureServer are not exported; only they have updateSettings().
    if (typeof (server as { updateSettings?: unknown }).updateSettings === 'function') {
      return isTls ? 'h2-secure' : 'h2c';
    }
    if (server instanceof https.Server) return 'https1';
    if (!isTls && typeof (server as { closeIdleConnections?: unknown }).closeIdleConnections === 'function') {
      return 'http1';
    }
  }
  throw new EvenlbError(
    ErrorCodes.INVALID_OPTION,
    `${component}: server must be a node:http, node:https or node:http2 server; received ${describeValue(server)}`,
    { details: { component, field: 'server' } },
  );
}

/**
 * Stops accepting connections without touching the open ones. `server.close()` on HTTP
 * servers also destroys every connection idle at that instant, racing clients that are
 * writing their next request on it; the listening socket's own close does not.
 */
export function stopListening(server: net.Server): void {
  net.Server.prototype.close.call(server);
}
