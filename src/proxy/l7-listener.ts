/**
 * An L7 listener: `http` (HTTP/1.1 and h2c prior knowledge on one port, told apart by the
 * HTTP/2 connection preface `PRI * HTTP/2.0`) or `https` (TLS, ALPN `h2` or `http/1.1`). A
 * plain `net` / `tls` server accepts connections and hands each to the right reader:
 * HTTP/1.1 connections to the proxy's own data path (`Http1Downstream`, strict parsing,
 * keep-alive upstream sockets, one sweep per listener for timeouts), HTTP/2 to a node:http2
 * server. The data path hands the few requests it does not carry (HTTP/1.0, `h2` clusters)
 * to a node:http server with the bytes already read; HTTP/1.1 upstreams are reached from there
 * and from HTTP/2 clients through the same attempts and socket pool (`ProxyCluster.forward`).
 *
 * Hardening on that node:http side matches the data path's: Node's strict parser
 * (`insecureHTTPParser: false`) rejects Content-Length with Transfer-Encoding, conflicting
 * Content-Length and malformed chunking; this listener adds its own checks on `rawHeaders`
 * (duplicate Content-Length, any Transfer-Encoding other than `chunked`, header count) and
 * answers every rejected request with 400 / 431 and `Connection: close` without forwarding a
 * byte. Requests for hosts no route serves get 404 and are never forwarded: the proxy is not
 * an open proxy.
 */

import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import http2, { type Http2Session, type ServerHttp2Stream } from 'node:http2';
import net, { type Socket } from 'node:net';
import tls from 'node:tls';
import type { Logger } from 'pino';
import type { Clock, TimerHandle } from '../core/clock.js';
import type { Random } from '../core/random.js';
import { Shutdown } from '../core/shutdown.js';
import type { ProxyMetrics } from '../metrics/proxy-metrics.js';
import { forwardedClientCert } from './client-certificate.js';
import type { ListenerConfig, ListenerTlsConfig } from './config-schema.js';
import { forwardRequestToH2, forwardStreamToH2 } from './h2-upstream-exchange.js';
import { upstreamRequestHeaders } from './hop-headers.js';
import { type AccessEntry, type Http1Context, Http1Downstream } from './http1/downstream-connection.js';
import { Http1ResponseExchange, Http2ResponseExchange } from './http1-upstream-exchange.js';
import type { ListenerBinding } from './listener-binding.js';
import { ListenerRecycling } from './listener-recycling.js';
import { ListenerSockets } from './listener-sockets.js';
import { ListenerTls } from './listener-tls.js';
import { rawReply, replyHttp1, replyHttp2 } from './local-reply.js';
import type { ProxyCluster } from './proxy-cluster.js';
import { isValidHost, type RouteTable, splitRequestTarget } from './route-table.js';

/** What a listener reads per request; swapped as a whole on reload. */
export interface L7State {
  readonly routes: RouteTable<ProxyCluster>;
  readonly accessLog: boolean;
}

export interface L7ListenerDeps {
  readonly state: () => L7State;
  readonly metrics: ProxyMetrics;
  readonly logger: Logger;
  /** Timeouts, the sweep and access-log durations read this clock. */
  readonly clock: Clock;
  /** Draws recycled connections' age jitter. */
  readonly random: Random;
}

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

function clientErrorStatus(code: string | undefined): { status: number; reason: string } {
  if (code === 'HPE_HEADER_OVERFLOW') return { status: 431, reason: 'header-too-large' };
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, reason: 'request-timeout' };
  return { status: 400, reason: 'bad-request' };
}

/** How often the HTTP/1.1 data path's connections are checked for timeouts, at most. */
const SWEEP_MAX_MS = 250;

export class L7Listener {
  readonly config: ListenerConfig;
  readonly #deps: L7ListenerDeps;
  readonly #h1: http.Server;
  readonly #h2: http2.Http2Server;
  readonly #front: net.Server | tls.Server;
  readonly #tls: ListenerTls | undefined;
  readonly #proto: 'http' | 'https';
  readonly #sockets: ListenerSockets;
  readonly #sessions = new Set<Http2Session>();
  readonly #recycling: ListenerRecycling;
  /** Connections on the proxy's own HTTP/1.1 data path. */
  readonly #fast = new Set<Http1Downstream>();
  readonly #clientCerts = new WeakMap<Socket, string | undefined>();
  /** node:http sockets whose current request is their last (see `#onRequest`). */
  readonly #lastOnSocket = new WeakSet<Socket>();
  readonly #fastContext: Http1Context;
  readonly #sweepMs: number;
  #sweep: TimerHandle | undefined;
  #binding: ListenerBinding | undefined;
  readonly #shutdown = new Shutdown();

  constructor(config: ListenerConfig, deps: L7ListenerDeps) {
    this.config = config;
    this.#deps = deps;
    this.#sockets = new ListenerSockets(config.name, deps.metrics, deps.clock);
    this.#proto = config.protocol === 'https' ? 'https' : 'http';
    const limits = config.limits;
    this.#h1 = http.createServer(
      {
        insecureHTTPParser: false,
        maxHeaderSize: limits.maxHeaderBytes,
        requireHostHeader: true,
        joinDuplicateHeaders: false,
        headersTimeout: limits.headersTimeoutMs,
        requestTimeout: limits.requestTimeoutMs,
        keepAliveTimeout: limits.idleTimeoutMs,
        connectionsCheckingInterval: Math.min(30_000, Math.max(1000, Math.floor(limits.headersTimeoutMs / 2))),
      },
      (req, res) => this.#onRequest(req, res),
    );
    // Node silently drops headers past maxHeadersCount; keep one more so "too many" is detectable.
    this.#h1.maxHeadersCount = limits.maxHeaderCount + 1;
    this.#h1.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => this.#onClientError(err, socket));
    // No tunnels here: CONNECT gets 405; upgrades are carried only by the HTTP/1.1 data path.
    this.#h1.on('connect', (_req: IncomingMessage, socket: Socket) => this.#refuseRaw(socket, 405));
    this.#h1.on('upgrade', (_req: IncomingMessage, socket: Socket) => this.#refuseRaw(socket, 501));
    this.#h2 = http2.createServer({
      maxHeaderListPairs: limits.maxHeaderCount + 8,
      settings: { maxConcurrentStreams: 1000, maxHeaderListSize: limits.maxHeaderBytes },
      maxSessionMemory: 64,
    });
    this.#h2.on(
      'stream',
      (stream: ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number, raw: string[] | undefined) =>
        this.#onStream(stream, headers, flags, raw),
    );
    this.#h2.on('session', (session) => this.#onSession(session));
    // Node's own per-session idle timer (real time; a Clock cannot drive node:http2's sockets).
    this.#h2.setTimeout(limits.idleTimeoutMs);
    if (config.protocol === 'https') {
      this.#tls = new ListenerTls(config.tls as ListenerTlsConfig);
      this.#front = tls.createServer({ ...this.#tls.serverOptions(), ALPNProtocols: ['h2', 'http/1.1'] }, (socket) => {
        this.#sockets.track(socket);
        if (socket.alpnProtocol === 'h2') this.#h2.emit('connection', socket);
        else this.#serveHttp1(socket, undefined);
      });
      this.#front.on('tlsClientError', () => {});
    } else {
      this.#front = net.createServer({ noDelay: true }, (socket) => this.#sniff(socket));
    }
    // Downstream recycling: age and request limits, fair-share shedding (listener-recycling.ts).
    this.#recycling = new ListenerRecycling(config, {
      h1: this.#h1,
      h2: this.#h2,
      downstreams: this.#fast,
      metrics: deps.metrics,
      logger: deps.logger,
      clock: deps.clock,
      random: deps.random,
      port: () => this.port,
      draining: () => this.#shutdown.closed,
    });
    this.#sweepMs = Math.max(
      25,
      Math.min(SWEEP_MAX_MS, Math.floor(Math.min(limits.headersTimeoutMs, limits.idleTimeoutMs) / 4)),
    );
    this.#fastContext = {
      listener: config.name,
      proto: this.#proto,
      limits,
      trustForwarded: config.trustForwardedHeaders,
      metrics: deps.metrics,
      clock: deps.clock,
      recycle: this.#recycling.policy,
      state: deps.state,
      handoff: (socket, pending) => this.#toNodeHttp1(socket, pending),
      clientCert: (socket) => this.#clientCert(socket),
      access: (e: AccessEntry) => this.#access(e, '1.1'),
      released: (conn) => {
        this.#fast.delete(conn);
        this.#recycling.released(conn);
      },
    };
  }

  /** `X-Forwarded-Client-Cert` for a connection of a mutual-TLS listener (computed once per socket). */
  #clientCert(socket: Socket | undefined): string | undefined {
    if (socket === undefined || this.config.tls?.clientCa === undefined) return undefined;
    if (this.#clientCerts.has(socket)) return this.#clientCerts.get(socket);
    const value = forwardedClientCert(socket);
    this.#clientCerts.set(socket, value);
    return value;
  }

  /** Serves an HTTP/1.1 connection on the proxy's own data path; `head` = bytes already read. */
  #serveHttp1(socket: Socket, head: Buffer | undefined): void {
    const conn = new Http1Downstream(socket, this.#fastContext);
    // Accepted before this listener began to drain (a reload replaced it): served, then closed.
    if (this.#shutdown.closed) conn.retire();
    this.#fast.add(conn);
    if (this.#sweep === undefined) this.#armSweep();
    conn.start(head);
  }

  /** One sweep of the data path's connections for timeouts; re-armed while any is open. */
  #armSweep(): void {
    this.#sweep = this.#deps.clock.setTimeout(() => {
      this.#sweep = undefined;
      if (this.#fast.size === 0) return;
      const now = this.#deps.clock.now();
      for (const c of this.#fast) c.check(now);
      this.#armSweep();
    }, this.#sweepMs);
  }

  /** Hands a connection (and bytes read from it but not handled) to the node:http server. */
  #toNodeHttp1(socket: Socket, pending: Buffer | undefined): void {
    socket.pause();
    if (pending !== undefined && pending.length > 0) socket.unshift(pending);
    this.#h1.emit('connection', socket);
    socket.resume();
  }

  /** Serves what `binding` accepts (the proxy's socket, handed over on reload); returns its port. */
  listen(binding: ListenerBinding): number {
    this.#binding = binding;
    binding.serve((socket) => this.#front.emit('connection', socket), this.config.limits.maxConnections);
    this.#recycling.start();
    return binding.port;
  }

  /** Its downstream recycling: fair-share figures, and ending shedding before a replacement binds. */
  get recycling(): ListenerRecycling {
    return this.#recycling;
  }

  get port(): number {
    return this.#binding?.port ?? 0;
  }

  /**
   * Re-reads an `https` listener's certificate files; new connections get the new ones when
   * they changed. Returns whether they changed; throws when a file cannot be used.
   */
  refreshTls(): boolean {
    return this.#tls?.refresh(this.#front as tls.Server) ?? false;
  }

  /** Reads the first bytes: the HTTP/2 preface goes to the h2 server, anything else to HTTP/1.1. */
  #sniff(socket: Socket): void {
    this.#sockets.track(socket);
    socket.on('error', () => {});
    let head: Buffer | undefined;
    const onData = (chunk: Buffer): void => {
      head = head === undefined ? chunk : Buffer.concat([head, chunk]);
      const n = Math.min(head.length, H2_PREFACE.length);
      const isH2 = head.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      if (isH2 && head.length < H2_PREFACE.length) return;
      socket.off('data', onData);
      if (isH2) {
        socket.pause();
        socket.unshift(head);
        this.#h2.emit('connection', socket);
      } else {
        this.#serveHttp1(socket, head);
      }
    };
    socket.on('data', onData);
  }

  #onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
    const { status, reason } = clientErrorStatus(err.code);
    this.#deps.metrics.rejected(this.config.name, reason);
    if (socket.writable && (err as { bytesParsed?: number }).bytesParsed !== undefined) {
      socket.end(rawReply(status, reason, true), 'latin1');
    }
    socket.destroySoon();
  }

  #refuseRaw(socket: Socket, status: number): void {
    const reason = status === 405 ? 'method-not-allowed' : 'upgrade-not-supported';
    this.#deps.metrics.rejected(this.config.name, reason);
    socket.end(rawReply(status, reason, true), 'latin1');
    socket.destroySoon();
  }

  #reject(res: ServerResponse, status: number, reason: string): undefined {
    this.#deps.metrics.rejected(this.config.name, reason);
    this.#deps.metrics.observeDownstream(this.config.name, status);
    replyHttp1(res, status, reason, status === 400 || status === 431);
    if (status === 400 || status === 431) res.once('finish', () => res.socket?.destroySoon());
  }

  #onRequest(req: IncomingMessage, res: ServerResponse): undefined {
    // node:http parses pipelined requests ahead of the responses: one that follows a request
    // ending its connection (Connection: close, HTTP/1.0 without keep-alive, Transfer-Encoding
    // on HTTP/1.0) is never forwarded; the socket closes after the earlier response.
    if (this.#lastOnSocket.has(req.socket)) {
      req.resume();
      return;
    }
    if (!res.shouldKeepAlive) this.#lastOnSocket.add(req.socket);
    const raw = req.rawHeaders;
    const limits = this.config.limits;
    if (raw.length > limits.maxHeaderCount * 2) return this.#reject(res, 431, 'too-many-headers');
    // Smuggling checks beyond the parser: one Content-Length, Transfer-Encoding only "chunked".
    let cl = 0;
    let te = 0;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i] as string;
      if (name.length === 14 && name.toLowerCase() === 'content-length') cl++;
      else if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') {
        te++;
        if ((raw[i + 1] as string).trim().toLowerCase() !== 'chunked') te += 2;
      }
    }
    if (cl > 1 || te > 1 || (cl > 0 && te > 0)) return this.#reject(res, 400, 'bad-request');
    const method = req.method ?? 'GET';
    if (method === 'CONNECT') return this.#reject(res, 405, 'method-not-allowed');
    const url = req.url ?? '/';
    const hostHeader = req.headers.host;
    const target = splitRequestTarget(url, hostHeader);
    if (target === undefined) return this.#reject(res, 400, 'bad-request-target');
    if (
      (target.host !== undefined && !isValidHost(target.host)) ||
      (hostHeader !== undefined && !isValidHost(hostHeader))
    )
      return this.#reject(res, 400, 'bad-host');
    // RFC 9112 §6.1: Transfer-Encoding on an HTTP/1.0 request ends the connection after the response.
    if (te > 0 && req.httpVersionMinor === 0) {
      res.shouldKeepAlive = false;
      this.#lastOnSocket.add(req.socket);
    }
    const { host, path } = target;
    const state = this.#deps.state();
    const match = state.routes.match(host, path, target.absolute);
    if (match === undefined) return this.#reject(res, 404, 'no-route');
    const cluster = match.cluster;
    const unavailable = cluster.unavailableReason();
    if (unavailable !== undefined) return this.#reject(res, 503, unavailable);
    const start = state.accessLog ? this.#deps.clock.now() : 0;
    const done = (status: number, reason: string | undefined): void => {
      this.#deps.metrics.observeDownstream(this.config.name, status);
      if (state.accessLog)
        this.#access(
          {
            client: req.socket.remoteAddress,
            method,
            path: url,
            status,
            reason,
            startMs: start,
            cluster: cluster.name,
          },
          '1.1',
        );
    };
    const headers = upstreamRequestHeaders(raw, {
      clientAddress: req.socket.remoteAddress ?? '',
      proto: this.#proto,
      host: host ?? '',
      version: '1.1',
      hostRewrite: cluster.config.hostRewrite,
      clientCert: this.#clientCert(req.socket),
      trustForwarded: this.config.trustForwardedHeaders,
    });
    const hasBody = te > 0 || (cl > 0 && req.headers['content-length'] !== '0');
    // Framing is the proxy's: the length node:http parsed (and checked the body against), or
    // none and the body goes chunked.
    if (hasBody && te === 0) headers.push('content-length', req.headers['content-length'] as string);
    if (cluster.h2 === undefined) {
      cluster.forward({ method, path, headers, body: hasBody ? req : null }, new Http1ResponseExchange(res, done));
      return;
    }
    void forwardRequestToH2(req, res, headers, hasBody, cluster.cluster, cluster.h2, done);
  }

  #onSession(session: Http2Session): void {
    this.#sessions.add(session);
    session.on('error', () => {});
    session.once('close', () => this.#sessions.delete(session));
    if (this.#shutdown.closed) session.close();
  }

  #onStream(
    stream: ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
    flags: number,
    raw: string[] | undefined,
  ): undefined {
    stream.on('error', () => {});
    const method = String(headers[':method'] ?? 'GET');
    const path = String(headers[':path'] ?? '/');
    const authority = headers[':authority'] ?? headers.host;
    const grpc = String(headers['content-type'] ?? '').startsWith('application/grpc');
    const reject = (status: number, reason: string): undefined => {
      this.#deps.metrics.rejected(this.config.name, reason);
      this.#deps.metrics.observeDownstream(this.config.name, status);
      replyHttp2(stream, status, reason, grpc);
    };
    if (method === 'CONNECT') return reject(405, 'method-not-allowed');
    if (authority === undefined || !isValidHost(String(authority))) return reject(400, 'bad-host');
    const state = this.#deps.state();
    const match = state.routes.match(String(authority), path);
    if (match === undefined) return reject(404, 'no-route');
    const cluster = match.cluster;
    const unavailable = cluster.unavailableReason();
    if (unavailable !== undefined) return reject(503, unavailable);
    const clientAddress = stream.session?.socket?.remoteAddress ?? '';
    const start = state.accessLog ? this.#deps.clock.now() : 0;
    const done = (status: number, reason: string | undefined): void => {
      this.#deps.metrics.observeDownstream(this.config.name, status);
      if (state.accessLog)
        this.#access(
          { client: clientAddress, method, path, status, reason, startMs: start, cluster: cluster.name },
          '2',
        );
    };
    const flat = raw ?? Object.entries(headers).flatMap(([k, v]) => (v === undefined ? [] : [k, String(v)]));
    const upHeaders = upstreamRequestHeaders(flat, {
      clientAddress,
      proto: this.#proto,
      host: authority === undefined ? '' : String(authority),
      version: '2',
      hostRewrite: cluster.config.hostRewrite,
      clientCert: this.#clientCert(stream.session?.socket as Socket | undefined),
      trustForwarded: this.config.trustForwardedHeaders,
    });
    if (cluster.h2 !== undefined) {
      const endStream = (flags & 0x1) !== 0;
      void forwardStreamToH2(
        stream,
        headers,
        endStream,
        cluster.cluster,
        cluster.h2,
        upHeaders,
        done,
        this.#deps.clock,
      );
      return;
    }
    const endStream = (flags & 0x1) !== 0;
    // To an HTTP/1.1 upstream the body is framed by the length the client declared (nghttp2
    // checks the DATA frames against it) or sent chunked.
    const length = headers['content-length'];
    if (!endStream && typeof length === 'string' && /^[0-9]{1,15}$/.test(length))
      upHeaders.push('content-length', length);
    cluster.forward(
      { method, path, headers: upHeaders, body: endStream ? null : stream },
      new Http2ResponseExchange(stream, method, done),
    );
  }

  #access(e: AccessEntry, version: '1.1' | '2'): void {
    const durationMs = Math.round((this.#deps.clock.now() - e.startMs) * 1000) / 1000;
    const { startMs: _, ...fields } = e;
    this.#deps.logger.info({ access: true, listener: this.config.name, ...fields, version, durationMs }, 'request');
  }

  /** Open client connections (sockets and HTTP/2 sessions). */
  get connections(): number {
    return this.#sockets.size;
  }

  /**
   * Stops accepting; idle keep-alive connections close now, busy ones after their response,
   * HTTP/2 sessions get GOAWAY and finish their streams. Resolves when all are gone or after
   * `timeoutMs` (then the rest are destroyed). Always settles; idempotent; `destroy()` settles
   * it at once.
   */
  close(timeoutMs = 30_000): Promise<void> {
    return this.#shutdown.close(async () => {
      // Nothing is shed while draining; stopping now frees the load-exchange port at once for
      // a listener replacing this one on reload.
      const recycling = this.#recycling.close();
      this.#front.close();
      this.#h1.close();
      this.#h1.closeIdleConnections();
      for (const c of [...this.#fast]) c.closeSoon();
      for (const s of this.#sessions) {
        s.goaway(http2.constants.NGHTTP2_NO_ERROR);
        s.close();
      }
      await this.#sockets.drain(timeoutMs, () => {
        this.#h1.closeIdleConnections();
        for (const c of [...this.#fast]) c.closeSoon();
      });
      await recycling;
      this.#stopSweep();
    });
  }

  /** Closes every connection at once (in-flight requests fail); settles a pending `close()`. Idempotent. */
  destroy(): Promise<void> {
    return this.#shutdown.destroy(async () => {
      this.#front.close();
      this.#h1.closeAllConnections();
      for (const s of this.#sessions) s.destroy();
      this.#sockets.destroyAll();
      this.#stopSweep();
      await this.#recycling.close();
    });
  }

  #stopSweep(): void {
    this.#sweep?.cancel();
    this.#sweep = undefined;
  }
}
