/**
 * Replies the proxy writes itself, as data: one catalogue (`LOCAL_REPLIES`) of every reason a
 * request can be answered locally — its status, whether a client may safely retry it (nothing
 * reached an endpoint), whether the connection can be reused after it, and its gRPC status —
 * used by every data path (the HTTP/1.1 data path, node:http, HTTP/2 streams, `tcp` listeners)
 * and by the access log, whose `reason` is the catalogue's key.
 *
 * A reply is a short text body plus an `x-evenlb-reason` header a client or an SRE can branch
 * on, written with the request in mind (RFC 9110 §9.3.2, §15): no body for `HEAD` (the
 * `Content-Length` still says what a `GET` would get) and none for 1xx, 204 and 304;
 * `Connection: close` when the connection cannot be reused. gRPC requests get the gRPC form
 * (HTTP 200, `grpc-status`, `grpc-message`), so clients see a proper status code instead of a
 * protocol error.
 */

import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { ServerHttp2Stream } from 'node:http2';

/** One local reply. */
export interface LocalReplySpec {
  readonly status: number;
  /** Nothing reached an endpoint (or it refused before reading): a client may send the request again. */
  readonly retryable: boolean;
  /** The connection cannot carry another request after this reply (the request's framing is in doubt). */
  readonly closes: boolean;
  /** The gRPC status code a gRPC client gets instead (https://grpc.github.io/grpc/core/md_doc_statuscodes.html). */
  readonly grpcStatus: number;
}

/** gRPC codes used here. */
const INTERNAL = 13;
const UNAVAILABLE = 14;
const UNIMPLEMENTED = 12;
const DEADLINE_EXCEEDED = 4;
const RESOURCE_EXHAUSTED = 8;

function reply(status: number, retryable: boolean, closes: boolean, grpcStatus: number): LocalReplySpec {
  return Object.freeze({ status, retryable, closes, grpcStatus });
}

/** Every local reply, by the reason code sent in `x-evenlb-reason` and logged in the access log. */
export const LOCAL_REPLIES = Object.freeze({
  // The request itself: refused before anything was forwarded.
  'bad-request': reply(400, false, true, INTERNAL),
  'bad-request-target': reply(400, false, true, INTERNAL),
  'bad-host': reply(400, false, true, INTERNAL),
  'header-too-large': reply(431, false, true, RESOURCE_EXHAUSTED),
  'too-many-headers': reply(431, false, true, RESOURCE_EXHAUSTED),
  'request-timeout': reply(408, true, true, DEADLINE_EXCEEDED),
  'method-not-allowed': reply(405, false, true, UNIMPLEMENTED),
  'upgrade-not-supported': reply(501, false, true, UNIMPLEMENTED),
  'expectation-failed': reply(417, false, false, INTERNAL),
  'no-route': reply(404, false, false, UNIMPLEMENTED),
  // Nothing to send it to: no endpoint reached, safe to retry.
  'service-not-found': reply(503, true, false, UNAVAILABLE),
  'discovery-pending': reply(503, true, false, UNAVAILABLE),
  'no-endpoints': reply(503, true, false, UNAVAILABLE),
  'none-ready': reply(503, true, false, UNAVAILABLE),
  'all-ejected': reply(503, true, false, UNAVAILABLE),
  'cluster-closed': reply(503, true, false, UNAVAILABLE),
  'connect-failed': reply(503, true, false, UNAVAILABLE),
  // An endpoint took the request and failed it.
  'upstream-timeout': reply(504, false, false, DEADLINE_EXCEEDED),
  'deadline-exceeded': reply(504, false, false, DEADLINE_EXCEEDED),
  'upstream-reset': reply(502, false, false, UNAVAILABLE),
  'upstream-error': reply(502, false, false, INTERNAL),
} satisfies Record<string, LocalReplySpec>);

export type LocalReason = keyof typeof LOCAL_REPLIES;

/**
 * The local reply for an error that ended a request before any upstream answer. Nothing reached
 * an endpoint in the 503 cases, so a client may retry them; 502 means an upstream failed (reset
 * or closed: `upstream-reset`; anything else, a malformed response or a TLS failure:
 * `upstream-error`), 504 that it was too slow.
 *
 * @example
 * reasonForError(new EvenlbError(ErrorCodes.CLOSED, 'h2 session pool is closed')); // 'cluster-closed'
 */
export function reasonForError(err: Error): LocalReason {
  const code = (err as { code?: unknown }).code;
  switch (code) {
    case 'EVENLB_SERVICE_NOT_FOUND':
      return 'service-not-found';
    // The cluster, or the upstream pool the request was to use, was closed by the proxy itself
    // (a reload retired the cluster, the proxy is shutting down): not an upstream failure.
    case 'EVENLB_CLOSED':
      return 'cluster-closed';
    case 'EVENLB_DISCOVERY_PENDING':
      return 'discovery-pending';
    case 'EVENLB_NO_ENDPOINTS': {
      const r = (err as { details?: { reason?: unknown } }).details?.reason;
      return typeof r === 'string' && r in LOCAL_REPLIES ? (r as LocalReason) : 'no-endpoints';
    }
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
    case 'EVENLB_TIMEOUT':
      return 'upstream-timeout';
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'ECONNREFUSED':
    case 'EVENLB_CONNECT_FAILED':
      return 'connect-failed';
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
    case 'ERR_HTTP2_STREAM_ERROR':
      return 'upstream-reset';
    default:
      return 'upstream-error';
  }
}

/**
 * The status and reason of the local reply for `err` (see `reasonForError`).
 *
 * @example
 * statusForError(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })); // { status: 503, reason: 'connect-failed' }
 */
export function statusForError(err: Error): { status: number; reason: LocalReason } {
  const reason = reasonForError(err);
  return { status: LOCAL_REPLIES[reason].status, reason };
}

/** True when a response with `status` to `method` has no body (RFC 9110 §6.4.1). */
export function bodiless(method: string, status: number): boolean {
  return method === 'HEAD' || status < 200 || status === 204 || status === 304;
}

function text(status: number, reason: string): string {
  return `evenlb: ${status} ${reason}\n`;
}

/**
 * A whole local reply as HTTP/1.1 bytes (latin1), for connections the proxy writes to
 * directly: the request's `method` decides whether a body follows; `close` adds
 * `Connection: close` (the caller closes after writing).
 *
 * @example
 * socket.end(rawReply('no-route', 'HEAD', true), 'latin1'); // a head, no body
 */
export function rawReply(reason: LocalReason, method: string, close: boolean): string {
  const status = LOCAL_REPLIES[reason].status;
  const head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\nx-evenlb-reason: ${reason}\r\n${close ? 'connection: close\r\n' : ''}`;
  if (status < 200 || status === 204 || status === 304) return `${head}\r\n`;
  const body = text(status, reason);
  const framing = `content-type: text/plain; charset=utf-8\r\ncontent-length: ${body.length}\r\n\r\n`;
  return method === 'HEAD' ? head + framing : head + framing + body;
}

/** Writes a local reply on a node:http response (if its head was not sent yet; else the response is cut). */
export function replyHttp1(res: ServerResponse, reason: LocalReason, close = LOCAL_REPLIES[reason].closes): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const status = LOCAL_REPLIES[reason].status;
  const body = text(status, reason);
  const headers: Record<string, string | number> = {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': body.length,
    'x-evenlb-reason': reason,
  };
  if (close) headers.connection = 'close';
  res.writeHead(status, headers);
  // node:http drops the body of a HEAD response itself.
  res.end(body);
}

/** Writes a local reply on an HTTP/2 stream; gRPC requests get a trailers-only gRPC status, HEAD no DATA. */
export function replyHttp2(stream: ServerHttp2Stream, reason: LocalReason, grpc: boolean, method = 'GET'): void {
  if (stream.destroyed || stream.closed) return;
  if (stream.headersSent) {
    stream.close(0x2 /* INTERNAL_ERROR */);
    return;
  }
  const spec = LOCAL_REPLIES[reason];
  if (grpc) {
    stream.respond(
      {
        ':status': 200,
        'content-type': 'application/grpc',
        'grpc-status': String(spec.grpcStatus),
        'grpc-message': encodeURIComponent(`evenlb: ${spec.status} ${reason}`),
        'x-evenlb-reason': reason,
      },
      { endStream: true },
    );
    return;
  }
  const body = text(spec.status, reason);
  const headers = {
    ':status': spec.status,
    'content-type': 'text/plain; charset=utf-8',
    'content-length': body.length,
    'x-evenlb-reason': reason,
  };
  if (bodiless(method, spec.status)) {
    stream.respond(headers, { endStream: true });
    return;
  }
  stream.respond(headers);
  stream.end(body);
}
