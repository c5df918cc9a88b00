/**
 * Replies the proxy writes itself (no route, no endpoint, upstream failure, bad request): a
 * short text body plus an `x-evenlb-reason` header a client or an SRE can branch on. gRPC
 * requests get the gRPC form (HTTP 200, `grpc-status`, `grpc-message`) so clients see a proper
 * status code instead of a protocol error.
 */

import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { ServerHttp2Stream } from 'node:http2';

/** gRPC status codes used for local replies. */
const GRPC_STATUS: Readonly<Record<number, number>> = { 400: 13, 404: 12, 421: 12, 431: 13, 502: 14, 503: 14, 504: 4 };

/**
 * The local reply for an error that ended a request before any upstream answer: its status and
 * the `x-evenlb-reason` (also the access log's `reason`). Nothing reached an endpoint in the
 * 503 cases, so a client may retry them; 502 means an upstream failed, 504 that it was too slow.
 *
 * @example
 * statusForError(new EvenlbError(ErrorCodes.CLOSED, 'h2 session pool is closed')); // { status: 503, reason: 'cluster-closed' }
 */
export function statusForError(err: Error): { status: number; reason: string } {
  const details = (err as { details?: { reason?: unknown } }).details;
  const code = (err as { code?: unknown }).code;
  if (code === 'EVENLB_SERVICE_NOT_FOUND') return { status: 503, reason: 'service-not-found' };
  // The cluster, or the upstream pool the request was to use, was closed by the proxy itself (a
  // reload retired the cluster, the proxy is shutting down): not an upstream failure.
  if (code === 'EVENLB_CLOSED') return { status: 503, reason: 'cluster-closed' };
  if (code === 'EVENLB_DISCOVERY_PENDING') return { status: 503, reason: 'discovery-pending' };
  if (code === 'EVENLB_NO_ENDPOINTS') {
    return { status: 503, reason: typeof details?.reason === 'string' ? details.reason : 'no-endpoints' };
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'EVENLB_TIMEOUT') {
    return { status: 504, reason: 'upstream-timeout' };
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ECONNREFUSED' || code === 'EVENLB_CONNECT_FAILED') {
    return { status: 503, reason: 'connect-failed' };
  }
  return { status: 502, reason: 'upstream-error' };
}

function body(status: number, reason: string): string {
  return `evenlb: ${status} ${reason}\n`;
}

/**
 * A whole local reply as HTTP/1.1 bytes (latin1), for connections the proxy writes to
 * directly; `close` adds `Connection: close`.
 */
export function rawReply(status: number, reason: string, close: boolean): string {
  const text = body(status, reason);
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n` +
    `content-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\n` +
    `x-evenlb-reason: ${reason}\r\n${close ? 'connection: close\r\n' : ''}\r\n${text}`
  );
}

/** Writes a local reply on an HTTP/1.1 response (if its head was not sent yet). */
export function replyHttp1(res: ServerResponse, status: number, reason: string, close = false): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = body(status, reason);
  const headers: Record<string, string | number> = {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'x-evenlb-reason': reason,
  };
  if (close) headers.connection = 'close';
  res.writeHead(status, headers);
  res.end(text);
}

/** Writes a local reply on an HTTP/2 stream; gRPC requests get a trailers-only gRPC status. */
export function replyHttp2(stream: ServerHttp2Stream, status: number, reason: string, grpc: boolean): void {
  if (stream.destroyed || stream.closed) return;
  if (stream.headersSent) {
    stream.close(0x2 /* INTERNAL_ERROR */);
    return;
  }
  if (grpc) {
    stream.respond(
      {
        ':status': 200,
        'content-type': 'application/grpc',
        'grpc-status': String(GRPC_STATUS[status] ?? 13),
        'grpc-message': encodeURIComponent(`evenlb: ${status} ${reason}`),
        'x-evenlb-reason': reason,
      },
      { endStream: true },
    );
    return;
  }
  const text = body(status, reason);
  stream.respond({
    ':status': status,
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'x-evenlb-reason': reason,
  });
  stream.end(text);
}
