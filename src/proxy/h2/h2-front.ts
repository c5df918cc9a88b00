/**
 * The HTTP/2 side of an L7 listener (h2c prior knowledge, or ALPN `h2` over TLS): a node:http2
 * server whose sessions are watched for deadlines (`H2SessionWatch`: idle without a stream,
 * unanswered PING) and whose streams are routed by the one router — HTTP/1.1 clusters through
 * the one HTTP/1.1 exchange (`H2StreamSink`), `h2` clusters through the h2 exchange. gRPC
 * requests get local replies in gRPC form.
 */
import http2, { type Http2Session, type ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import type { L7Front } from '../listener/l7-front.js';
import { serializeHeaders, upstreamRequestHeaders } from '../routing/hop-headers.js';
import { LOCAL_REPLIES, type LocalReason, replyHttp2 } from '../routing/local-reply.js';
import { routeRequest, unavailable } from '../routing/request-router.js';
import { H2SessionWatch } from './h2-session-watch.js';
import { H2StreamSink } from './h2-stream-sink.js';
import { forwardStreamToH2 } from './h2-upstream-exchange.js';

const END_STREAM = 0x1;

export class H2Front {
  readonly server: http2.Http2Server;
  readonly #front: L7Front;
  readonly #sessions = new Map<Http2Session, H2SessionWatch>();
  /** The socket `take()` is handing to the http2 server while it builds that socket's session. */
  #taking: Socket | undefined;
  #closing = false;

  constructor(front: L7Front) {
    this.#front = front;
    const limits = front.config.limits;
    this.server = http2.createServer({
      maxHeaderListPairs: limits.maxHeaderCount + 8,
      settings: { maxConcurrentStreams: 1000, maxHeaderListSize: limits.maxHeaderBytes },
      maxSessionMemory: 64,
    });
    this.server.on(
      'stream',
      (stream: ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number, raw: string[] | undefined) =>
        this.#onStream(stream, headers, flags, raw),
    );
    this.server.on('session', (session) => this.#onSession(session));
  }

  /** Serves `socket` (its bytes, preface included, not read yet) as an HTTP/2 connection. */
  take(socket: Socket): void {
    // node:http2 builds the session and emits 'session' within its 'connection' listener.
    this.#taking = socket;
    try {
      this.server.emit('connection', socket);
    } finally {
      this.#taking = undefined;
    }
  }

  #onSession(session: Http2Session): void {
    const front = this.#front;
    const watch = new H2SessionWatch(session, front.config.limits, front.clock.now(), (reason) =>
      front.metrics.closedBy(front.config.name, reason),
    );
    this.#sessions.set(session, watch);
    front.sweep.add(watch);
    // The socket itself: `session.socket` is a proxy object, which admission (keyed by the
    // socket it admitted) would not recognise for a cleartext (h2c) session.
    const socket = this.#taking ?? (session.socket as Socket | undefined);
    if (socket !== undefined) front.idleWhen(socket, () => watch.idle);
    session.on('error', () => {});
    session.once('close', () => {
      this.#sessions.delete(session);
      front.sweep.delete(watch);
    });
    if (this.#closing) session.close();
  }

  #onStream(
    stream: ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
    flags: number,
    raw: string[] | undefined,
  ): undefined {
    stream.on('error', () => {});
    const front = this.#front;
    const method = String(headers[':method'] ?? 'GET');
    const path = String(headers[':path'] ?? '/');
    const authority = headers[':authority'] ?? headers.host;
    const grpc = String(headers['content-type'] ?? '').startsWith('application/grpc');
    const reject = (reason: LocalReason): undefined => {
      front.metrics.rejected(front.config.name, reason);
      front.metrics.observeDownstream(front.config.name, LOCAL_REPLIES[reason].status);
      replyHttp2(stream, reason, grpc, method);
    };
    if (authority === undefined) return reject('bad-host');
    const state = front.state();
    const routed = routeRequest({ method, target: path, host: String(authority) }, state.routes);
    if (routed.type === 'refuse') return reject(routed.reason);
    const cluster = routed.cluster;
    const down = unavailable(cluster);
    if (down !== undefined) return reject(down);
    front.load?.stream(stream, grpc);
    const clientAddress = stream.session?.socket?.remoteAddress ?? '';
    const start = state.accessLog ? front.clock.now() : 0;
    const done = (status: number, reason: string | undefined): void => {
      front.metrics.observeDownstream(front.config.name, status);
      if (state.accessLog)
        front.access(
          { client: clientAddress, method, path, status, reason, startMs: start, cluster: cluster.name },
          '2',
        );
    };
    const flat = raw ?? Object.entries(headers).flatMap(([k, v]) => (v === undefined ? [] : [k, String(v)]));
    const upHeaders = upstreamRequestHeaders(flat, {
      clientAddress,
      proto: front.proto,
      host: routed.host ?? '',
      version: '2',
      hostRewrite: cluster.config.hostRewrite,
      clientCert: front.clientCert(stream.session?.socket as Socket | undefined),
      trustForwarded: front.config.trustForwardedHeaders,
    });
    const endStream = (flags & END_STREAM) !== 0;
    const h1 = cluster.h1;
    if (h1 === undefined) {
      void forwardStreamToH2(stream, headers, endStream, cluster, upHeaders, done);
      return;
    }
    // To an HTTP/1.1 upstream the body is framed by the length the client declared (nghttp2
    // checks the DATA frames against it) or sent chunked.
    const length = headers['content-length'];
    const known = !endStream && typeof length === 'string' && /^[0-9]{1,15}$/.test(length);
    if (known) upHeaders.push('content-length', length);
    const chunked = !endStream && !known;
    new H2StreamSink(stream, method, grpc, done, front.sweep, !endStream).send(
      {
        cluster,
        upstream: h1,
        servername: cluster.servernameFor(routed.host),
        method,
        hasBody: !endStream,
        upgrade: undefined,
        upHead: `${method} ${routed.path} HTTP/1.1\r\n${serializeHeaders(upHeaders)}${chunked ? 'transfer-encoding: chunked\r\n' : ''}\r\n`,
      },
      chunked,
    );
  }

  /** Sends GOAWAY to every session (they finish their streams); new sessions close at once. */
  close(): void {
    this.#closing = true;
    for (const s of this.#sessions.keys()) {
      s.goaway(http2.constants.NGHTTP2_NO_ERROR);
      s.close();
    }
  }

  /** Destroys every session. */
  destroy(): void {
    this.#closing = true;
    for (const s of this.#sessions.keys()) s.destroy();
  }
}
