/**
 * The node:http side of an L7 listener: the few requests the raw HTTP/1.1 data path hands over
 * (HTTP/1.0, and HTTP/1.1 requests for `h2` clusters), with the bytes already read. Hardening
 * matches the data path's: Node's strict parser (`insecureHTTPParser: false`) rejects
 * Content-Length with Transfer-Encoding, conflicting Content-Length and malformed chunking;
 * this adds its own checks on `rawHeaders` (duplicate Content-Length, any Transfer-Encoding
 * other than `chunked`, header count) and answers every rejected request with the catalogue's
 * local reply and `Connection: close` without forwarding a byte. Routing and validation are the
 * one router's; HTTP/1.1 clusters are reached through the one HTTP/1.1 exchange
 * (`NodeHttpSink`), `h2` clusters through the h2 exchange.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { forwardRequestToH2 } from '../h2/h2-upstream-exchange.js';
import type { L7Front } from '../listener/l7-front.js';
import { serializeHeaders, upstreamRequestHeaders } from '../routing/hop-headers.js';
import { LOCAL_REPLIES, type LocalReason, rawReply, replyHttp1 } from '../routing/local-reply.js';
import { routeRequest, unavailable } from '../routing/request-router.js';
import { NodeHttpSink } from './node-http-sink.js';

function clientErrorReason(code: string | undefined): LocalReason {
  if (code === 'HPE_HEADER_OVERFLOW') return 'header-too-large';
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'request-timeout';
  return 'bad-request';
}

export class NodeHttpFront {
  readonly server: http.Server;
  readonly #front: L7Front;
  /** Sockets whose current request is their last (see `#onRequest`). */
  readonly #lastOnSocket = new WeakSet<Socket>();
  /** Set by `drain()`: every response from then on carries `Connection: close`. */
  #draining = false;

  constructor(front: L7Front) {
    this.#front = front;
    const limits = front.config.limits;
    this.server = http.createServer(
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
    this.server.maxHeadersCount = limits.maxHeaderCount + 1;
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => this.#onClientError(err, socket));
    // No tunnels here: CONNECT gets 405; upgrades are carried only by the HTTP/1.1 data path.
    this.server.on('connect', (req: IncomingMessage, socket: Socket) =>
      this.#refuseRaw(socket, 'method-not-allowed', req.method ?? 'CONNECT'),
    );
    this.server.on('upgrade', (req: IncomingMessage, socket: Socket) =>
      this.#refuseRaw(socket, 'upgrade-not-supported', req.method ?? 'GET'),
    );
  }

  /** Serves `socket` from here on; `pending` = bytes read from it but not handled. */
  take(socket: Socket, pending: Buffer | undefined): void {
    socket.pause();
    if (pending !== undefined && pending.length > 0) socket.unshift(pending);
    this.server.emit('connection', socket);
    socket.resume();
  }

  #onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
    const reason = clientErrorReason(err.code);
    this.#front.metrics.rejected(this.#front.config.name, reason);
    if (socket.writable && (err as { bytesParsed?: number }).bytesParsed !== undefined) {
      socket.end(rawReply(reason, 'GET', true), 'latin1');
    }
    socket.destroySoon();
  }

  #refuseRaw(socket: Socket, reason: LocalReason, method: string): void {
    this.#front.metrics.rejected(this.#front.config.name, reason);
    socket.end(rawReply(reason, method, true), 'latin1');
    socket.destroySoon();
  }

  #reject(res: ServerResponse, reason: LocalReason): undefined {
    const front = this.#front;
    const spec = LOCAL_REPLIES[reason];
    front.metrics.rejected(front.config.name, reason);
    front.metrics.observeDownstream(front.config.name, spec.status);
    replyHttp1(res, reason, spec.closes);
    if (spec.closes) res.once('finish', () => res.socket?.destroySoon());
  }

  #onRequest(req: IncomingMessage, res: ServerResponse): undefined {
    // node:http parses pipelined requests ahead of the responses: one that follows a request
    // ending its connection (Connection: close, HTTP/1.0 without keep-alive, Transfer-Encoding
    // on HTTP/1.0) is never forwarded; the socket closes after the earlier response.
    if (this.#lastOnSocket.has(req.socket)) {
      req.resume();
      return;
    }
    if (this.#draining) res.shouldKeepAlive = false;
    if (!res.shouldKeepAlive) this.#lastOnSocket.add(req.socket);
    const front = this.#front;
    const raw = req.rawHeaders;
    if (raw.length > front.config.limits.maxHeaderCount * 2) return this.#reject(res, 'too-many-headers');
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
    if (cl > 1 || te > 1 || (cl > 0 && te > 0)) return this.#reject(res, 'bad-request');
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const state = front.state();
    const routed = routeRequest({ method, target: url, host: req.headers.host }, state.routes);
    if (routed.type === 'refuse') return this.#reject(res, routed.reason);
    // RFC 9112 §6.1: Transfer-Encoding on an HTTP/1.0 request ends the connection after the response.
    if (te > 0 && req.httpVersionMinor === 0) {
      res.shouldKeepAlive = false;
      this.#lastOnSocket.add(req.socket);
    }
    const cluster = routed.cluster;
    const down = unavailable(cluster);
    if (down !== undefined) return this.#reject(res, down);
    front.load?.response(res);
    const start = state.accessLog ? front.clock.now() : 0;
    const done = (status: number, reason: string | undefined): void => {
      front.metrics.observeDownstream(front.config.name, status);
      if (state.accessLog)
        front.access(
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
      proto: front.proto,
      host: routed.host ?? '',
      version: '1.1',
      hostRewrite: cluster.config.hostRewrite,
      clientCert: front.clientCert(req.socket),
      trustForwarded: front.config.trustForwardedHeaders,
    });
    const hasBody = te > 0 || (cl > 0 && req.headers['content-length'] !== '0');
    // Framing is the proxy's: the length node:http parsed (and checked the body against), or
    // none and the body goes chunked.
    if (hasBody && te === 0) headers.push('content-length', req.headers['content-length'] as string);
    const h1 = cluster.h1;
    if (h1 === undefined) {
      void forwardRequestToH2(req, res, headers, hasBody, cluster, done);
      return;
    }
    const chunked = hasBody && te > 0;
    new NodeHttpSink(req, res, hasBody, done, front.sweep).send(
      {
        cluster,
        upstream: h1,
        servername: cluster.servernameFor(routed.host),
        method,
        hasBody,
        upgrade: undefined,
        upHead: `${method} ${routed.path} HTTP/1.1\r\n${serializeHeaders(headers)}${chunked ? 'transfer-encoding: chunked\r\n' : ''}\r\n`,
      },
      chunked,
    );
  }

  /**
   * The listener drains: each connection's next response carries `Connection: close` and ends
   * it. Idle connections stay open until the listener's grace (`closeIdle()`), so a client
   * writing its next request now is answered rather than reset — as on the raw data path.
   */
  drain(): void {
    this.#draining = true;
  }

  /** Closes the connections with no request in flight. */
  closeIdle(): void {
    this.server.closeIdleConnections();
  }

  /** Stops the server (its connection-checking timer) and closes idle connections. */
  close(): void {
    this.#draining = true;
    this.server.close();
    this.server.closeIdleConnections();
  }
}
