/**
 * Verdicts and their comparison for the HTTP/1.1 parser differential test
 * (parser-differential.test.ts): what evenlb's data path makes of a byte string
 * (`parseRequestHead`, the proxy's target checks, `ChunkedScanner`), what a Node server made of
 * it, and whether the two disagree in a way that matters, is known harmless, or is a reported
 * known difference.
 */
import { ChunkedScanner } from '../../src/proxy/http1/chunked-scanner.js';
import { isHeadError, parseRequestHead } from '../../src/proxy/http1/message-head.js';
import { splitRequestTarget } from '../../src/proxy/routing/route-table.js';
import type { Case } from './parser-differential-draft.js';

const MAX_HEADER_BYTES = 16 * 1024;
const MAX_HEADER_COUNT = 100;

/** What a parser made of the first request in a byte string. */
export type Verdict =
  | { readonly kind: 'accept'; readonly method: string; readonly target: string; readonly bodyBytes: number }
  | { readonly kind: 'reject'; readonly reason: string }
  | { readonly kind: 'incomplete' };

export interface EvenlbResult {
  readonly first: Verdict;
  /** The first message's trailer section (chunked bodies), latin1; '' when none. */
  readonly trailers: string;
  /** The first message's head, latin1. */
  readonly head: string;
  /** The first message's body as it came, latin1. */
  readonly body: string;
  /** Connection stays open after the first request (no `Connection: close`, not HTTP/1.0). */
  readonly keepAlive: boolean;
  /** The target of the next request head, when the bytes after the first message hold one. */
  readonly secondTarget: string | undefined;
}

/**
 * Decoded length of a chunked body `buf[from..]` that `ChunkedScanner` accepted, and where its
 * trailer section starts.
 */
export function decodeChunked(buf: Buffer, from: number): { bytes: number; trailerStart: number } {
  let pos = from;
  let total = 0;
  for (;;) {
    let size = 0;
    for (;;) {
      const c = buf[pos] as number;
      const h = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
      if (h < 0) break;
      size = size * 16 + h;
      pos++;
    }
    pos = buf.indexOf(10, pos) + 1;
    if (size === 0) return { bytes: total, trailerStart: pos };
    total += size;
    pos += size + 2;
  }
}

/**
 * evenlb's verdict, as the HTTP/1.1 data path computes it: `parseRequestHead`, then the checks
 * `DownstreamConnection` makes before forwarding (CONNECT refused, the target must be
 * origin-form or an http(s) absolute-form), then the body's end.
 */
export function evenlbVerdict(buf: Buffer): EvenlbResult {
  const parsed = parseRequestHead(buf, 0, MAX_HEADER_BYTES, MAX_HEADER_COUNT);
  const none = { keepAlive: false, secondTarget: undefined, trailers: '', head: '', body: '' };
  if (parsed === undefined) return { first: { kind: 'incomplete' }, ...none };
  if (isHeadError(parsed)) return { first: { kind: 'reject', reason: parsed.reason }, ...none };
  const head = parsed;
  if (head.method === 'CONNECT') return { first: { kind: 'reject', reason: 'method-not-allowed' }, ...none };
  if (splitRequestTarget(head.target, head.host) === undefined) {
    return { first: { kind: 'reject', reason: 'bad-request-target' }, ...none };
  }
  let end: number;
  let bodyBytes: number;
  let trailers = '';
  if (head.chunked) {
    const scanner = new ChunkedScanner(MAX_HEADER_BYTES);
    end = scanner.scan(buf, head.length, buf.length);
    if (end < 0) return { first: { kind: 'reject', reason: 'malformed-chunked' }, ...none };
    if (!scanner.done) return { first: { kind: 'incomplete' }, ...none };
    const decoded = decodeChunked(buf, head.length);
    bodyBytes = decoded.bytes;
    trailers = buf.toString('latin1', decoded.trailerStart, end - 2);
  } else {
    bodyBytes = Math.max(0, head.contentLength);
    end = head.length + bodyBytes;
    if (end > buf.length) return { first: { kind: 'incomplete' }, ...none };
  }
  const next = end < buf.length ? parseRequestHead(buf, end, MAX_HEADER_BYTES, MAX_HEADER_COUNT) : undefined;
  return {
    first: { kind: 'accept', method: head.method, target: head.target, bodyBytes },
    trailers,
    head: buf.toString('latin1', 0, head.length),
    body: buf.toString('latin1', head.length, end),
    keepAlive: !head.close,
    secondTarget: next === undefined || isHeadError(next) ? undefined : next.target,
  };
}

/** What the Node server saw on one connection. */
export interface NodeRecord {
  readonly requests: { method: string; url: string; bodyBytes: number; complete: boolean }[];
  error: string | undefined;
  /** Requests completed before the client error. */
  errorAfter: number;
}

export interface NodeResult {
  readonly first: Verdict;
  readonly secondUrl: string | undefined;
}

export function nodeVerdict(rec: NodeRecord | undefined, response: string, timedOut: boolean): NodeResult {
  if (rec === undefined) return { first: { kind: 'reject', reason: 'no-record' }, secondUrl: undefined };
  const r0 = rec.requests[0];
  const secondUrl = rec.requests[1]?.url;
  if (r0?.complete) {
    return { first: { kind: 'accept', method: r0.method, target: r0.url, bodyBytes: r0.bodyBytes }, secondUrl };
  }
  const error = rec.error;
  if (error === 'HPE_INVALID_EOF_STATE' || (error === undefined && timedOut)) {
    return { first: { kind: 'incomplete' }, secondUrl };
  }
  if (error !== undefined) return { first: { kind: 'reject', reason: error }, secondUrl };
  // `requireHostHeader` answers 400 without a 'request' or 'clientError' event.
  if (response.startsWith('HTTP/1.1 400')) return { first: { kind: 'reject', reason: 'missing-host' }, secondUrl };
  if (r0 !== undefined) return { first: { kind: 'reject', reason: 'aborted' }, secondUrl };
  return { first: { kind: 'incomplete' }, secondUrl };
}

export interface Finding {
  readonly id: number;
  readonly details: readonly string[];
  readonly bytes: string;
  readonly evenlb: Verdict;
  readonly node: Verdict;
  readonly problem: string;
}

export const TOKEN_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Disagreements where evenlb accepts and Node refuses that cannot desynchronise a Node backend,
 * each with the reason:
 *
 * - `method`: llhttp knows a fixed list of methods and refuses any other token (`get`, `FOO`)
 *   in the request line, before it has read a header: there is no framing to disagree on.
 * - `target`: Node refuses an authority-form or odd absolute-form target, but the proxy never
 *   forwards those as they came: it refuses any target that is not origin-form or http(s)
 *   absolute-form, and rewrites absolute-form to its path.
 * - `framing-value-tab`: Node refuses a tab around a `Content-Length` or `Transfer-Encoding`
 *   value; evenlb trims it to the same number or `chunked`, and the proxy re-serialises both
 *   fields (`Content-Length` trimmed, `Transfer-Encoding` rewritten as `chunked`).
 */
export const HARMLESS = {
  method: 'refused in the request line, before any framing',
  target: 'the proxy refuses or rewrites non-origin-form targets',
  'framing-value-tab': 'the proxy re-serialises Content-Length and Transfer-Encoding',
} as const;

/**
 * Disagreements where evenlb accepts bytes it forwards verbatim (in the chunked body) and Node
 * refuses them mid-message. Each has its own failing reproducer in
 * parser-differential.test.ts; the fuzz run counts them
 * and reports any other kind.
 */
export const REPORTED = {
  'chunk-extension': 'chunk extension outside the RFC 9112 grammar (`5;`, `5;a b`, `5;a="b`)',
  'trailer-name': 'trailer field name that is not a token (`x : 1`, `a b: c`, `x;: 1`)',
  'trailer-framing-field': 'Content-Length or Transfer-Encoding as a trailer field',
} as const;

export type Category = keyof typeof HARMLESS | keyof typeof REPORTED;

/** The known category of an "evenlb accepts, Node refuses" disagreement, if any. */
export function categorise(ev: EvenlbResult, node: Verdict): Category | undefined {
  if (ev.first.kind !== 'accept' || node.kind !== 'reject') return undefined;
  const reason = node.reason;
  if (reason === 'HPE_INVALID_METHOD') return 'method';
  if (reason === 'HPE_INVALID_URL' && !ev.first.target.startsWith('/')) return 'target';
  const trailerLines = ev.trailers === '' ? [] : ev.trailers.split('\r\n');
  if (reason === 'HPE_INVALID_HEADER_TOKEN' && trailerLines.some((l) => !TOKEN_NAME.test(l.slice(0, l.indexOf(':'))))) {
    return 'trailer-name';
  }
  if (
    (reason === 'HPE_INVALID_CONTENT_LENGTH' || reason === 'HPE_INVALID_TRANSFER_ENCODING') &&
    trailerLines.some((l) => /^(content-length|transfer-encoding):/i.test(l))
  ) {
    return 'trailer-framing-field';
  }
  if (
    (reason === 'HPE_INVALID_CONTENT_LENGTH' || reason === 'HPE_INVALID_TRANSFER_ENCODING') &&
    /^(content-length|transfer-encoding):[ \t]*(\t[^\r]*|[^\r]*\t)\r$/im.test(ev.head)
  ) {
    return 'framing-value-tab';
  }
  if (reason === 'HPE_STRICT' && /(^|\r\n)[0-9a-fA-F]+;/.test(ev.body)) return 'chunk-extension';
  return undefined;
}

export function compare(c: Case, ev: EvenlbResult, nd: NodeResult): string | undefined {
  const a = ev.first;
  const b = nd.first;
  if (a.kind !== 'accept') return undefined;
  if (b.kind !== 'accept')
    return `evenlb accepts, Node ${b.kind === 'reject' ? `rejects (${b.reason})` : 'waits for more'}`;
  if (a.method !== b.method || a.target !== b.target) return 'request line differs';
  if (a.bodyBytes !== b.bodyBytes) return `body length differs: evenlb ${a.bodyBytes}, Node ${b.bodyBytes}`;
  if (ev.keepAlive && nd.secondUrl !== undefined && ev.secondTarget !== undefined && nd.secondUrl !== ev.secondTarget) {
    return `next request differs: evenlb ${ev.secondTarget}, Node ${nd.secondUrl}`;
  }
  if (ev.keepAlive && ev.secondTarget !== undefined && nd.secondUrl === undefined && c.tags.includes('valid')) {
    return 'Node did not see the next request';
  }
  return undefined;
}
