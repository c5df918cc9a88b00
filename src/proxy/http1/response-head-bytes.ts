/**
 * The response head a raw HTTP/1.1 client gets for an upstream response: hop-by-hop headers out,
 * `Via` in, and the framing written from what the proxy's parser decided about the upstream's
 * body, never copied — one Content-Length, or chunked (the upstream's codings), or none: then
 * the body runs until the upstream closes and so must the client connection. No framing header
 * for 1xx and 204 (RFC 9110 §8.6, RFC 9112 §6.1).
 */
import { downstreamRawHeaders, serializeHeaders } from '../routing/hop-headers.js';
import type { ResponseHead } from './message-head.js';

/** `close` was asked for, or is needed because the body is close-delimited. */
export interface ResponseHeadBytes {
  readonly text: string;
  readonly close: boolean;
}

/**
 * The head for `head`, answering `method`; `close` says whether the client connection closes
 * after this response (it may come back true when the body is close-delimited).
 *
 * @example
 * responseHeadBytes(head, 'GET', false).text; // 'HTTP/1.1 200 OK\r\n...content-length: 5\r\n\r\n'
 */
export function responseHeadBytes(head: ResponseHead, method: string, close: boolean): ResponseHeadBytes {
  const status = head.status;
  let extra = '';
  let closes = close;
  if (status === 204 || status < 200) {
    // no body and no framing header
  } else if (head.chunked) {
    extra = `transfer-encoding: ${head.transferEncoding}\r\n`;
  } else if (head.transferEncoding === undefined && head.contentLength >= 0) {
    extra = `content-length: ${head.contentLength}\r\n`;
  } else if (!(method === 'HEAD' || status === 304)) {
    // Ends when the upstream closes: so must the client connection.
    closes = true;
  }
  if (closes) extra += 'connection: close\r\n';
  const list = downstreamRawHeaders(head.headers, '1.1');
  return { text: `HTTP/1.1 ${status} ${head.statusText}\r\n${serializeHeaders(list)}${extra}\r\n`, close: closes };
}
