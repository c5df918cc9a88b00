/**
 * Hop-by-hop header handling (RFC 9110 §7.6.1) and the forwarding headers. A proxy must not
 * pass on `Connection`, the headers `Connection` lists, `Keep-Alive`, `Proxy-*`, `TE` (except
 * `trailers`), `Transfer-Encoding` and `Upgrade`; HTTP/2 forbids them outright.
 *
 * Message framing is never copied from the peer: `Content-Length` and `Transfer-Encoding` are
 * removed from every forwarded header list and the caller writes the framing of the message
 * it sends from what it parsed (`requestFraming`, the data path's own response head). A
 * `Connection` token naming a framing header, `Host` or a forwarding header is ignored
 * (`PROTECTED`): `Connection` removes only end-to-end extension headers, so it can neither
 * strip a body's length nor a header the proxy vouches for.
 *
 * Forwarding headers (trust model): by default the client's `X-Forwarded-For`,
 * `X-Forwarded-Proto`, `X-Forwarded-Host`, `Forwarded` and `X-Real-IP` are removed and the
 * proxy writes `X-Forwarded-For` (the client's address), `X-Forwarded-Proto` and
 * `X-Forwarded-Host` itself. A listener with `trustForwardedHeaders` (behind another proxy the
 * operator controls) appends to `X-Forwarded-For` and keeps the client's other forwarding
 * headers. `X-Forwarded-Client-Cert` is always the proxy's own. `Via` is appended.
 *
 * Everything works on flat `[name, value, ...]` arrays (Node's `rawHeaders`, undici's header
 * arrays) so the hot path allocates one array per message.
 */
import { named } from '../http1/message-head.js';

const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
]);

/** The hop-by-hop names by length, for case-insensitive checks that allocate nothing. */
const HOP_BY_LENGTH: (string[] | undefined)[] = [];
for (const name of HOP) {
  const list = HOP_BY_LENGTH[name.length];
  if (list === undefined) HOP_BY_LENGTH[name.length] = [name];
  else list.push(name);
}

function isHopName(name: string): boolean {
  const candidates = HOP_BY_LENGTH[name.length];
  if (candidates === undefined) return false;
  for (const c of candidates) if (named(name, c)) return true;
  return false;
}

/** True when `lowerName` is hop-by-hop on every message (not counting names listed in `Connection`). */
export function isHopHeader(lowerName: string): boolean {
  return HOP.has(lowerName);
}

/**
 * Names a `Connection` token can never remove: the framing headers, `Host` and the headers the
 * proxy writes or vouches for. (RFC 9110 §7.6.1 lets `Connection` name only hop-by-hop
 * extension fields; a token naming one of these is ignored, the message is not refused.)
 */
const PROTECTED = new Set([
  'content-length',
  'transfer-encoding',
  'host',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-forwarded-client-cert',
  'forwarded',
  'x-real-ip',
  'via',
]);

/**
 * Names listed in `Connection` header values, lower-cased, without the protected ones;
 * undefined when there are none.
 */
function connectionListed(values: readonly string[]): Set<string> | undefined {
  let out: Set<string> | undefined;
  for (const v of values) {
    for (const part of v.split(',')) {
      const name = part.trim().toLowerCase();
      if (name === '' || name === 'close' || name === 'keep-alive' || PROTECTED.has(name)) continue;
      if (out === undefined) out = new Set();
      out.add(name);
    }
  }
  return out;
}

export interface ForwardInfo {
  /** The client's address (socket remote address). */
  readonly clientAddress: string;
  /** `http` or `https`: how the client reached the proxy. */
  readonly proto: string;
  /** The Host (or `:authority`) the client asked for. */
  readonly host: string;
  /** `1.1` or `2`: the client's protocol version, for `Via`. */
  readonly version: string;
  /** Host header to send upstream; the client's when undefined. */
  readonly hostRewrite?: string | undefined;
  /** `X-Forwarded-Client-Cert` for a verified mutual-TLS client (see `forwardedClientCert`). */
  readonly clientCert?: string | undefined;
  /**
   * The listener trusts the client's forwarding headers (`listeners[].trustForwardedHeaders`):
   * `X-Forwarded-For` is appended to, `X-Forwarded-Proto`/`-Host`, `Forwarded` and `X-Real-IP`
   * are kept. Default false: they are replaced or removed.
   */
  readonly trustForwarded?: boolean | undefined;
}

/**
 * Request headers to send upstream, from the client's raw header list: hop-by-hop and framing
 * headers removed (the caller writes the framing, see `requestFraming`), `TE: trailers` kept,
 * forwarding headers set as the trust model says, `host` set. HTTP/2 pseudo-headers are skipped.
 */
export function upstreamRequestHeaders(raw: readonly string[], info: ForwardInfo): string[] {
  const out: string[] = [];
  const trust = info.trustForwarded === true;
  let connection: string | undefined;
  let xff: string | undefined;
  let via: string | undefined;
  let teTrailers = false;
  let clientProto = false;
  let clientHost = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    // Only names of these lengths need a look: most headers pass without lower-casing.
    if (!SPECIAL_LENGTHS[name.length] || name.charCodeAt(0) === 58 /* ':' */) {
      if (name.charCodeAt(0) !== 58) out.push(name, raw[i + 1] as string);
      continue;
    }
    const value = raw[i + 1] as string;
    const lower = name.toLowerCase();
    if (HOP.has(lower)) {
      if (lower === 'connection') connection = connection === undefined ? value : `${connection}, ${value}`;
      else if (lower === 'te' && /(^|,)\s*trailers\s*(;|,|$)/i.test(value)) teTrailers = true;
      continue;
    }
    switch (lower) {
      case 'host':
      case 'content-length': // framing is the caller's (requestFraming)
      case 'expect': // the proxy answered `100-continue` itself
      case 'x-forwarded-client-cert': // only the proxy vouches for a client certificate
        continue;
      case 'x-forwarded-proto':
        if (!trust) continue;
        clientProto = true;
        break;
      case 'x-forwarded-host':
        if (!trust) continue;
        clientHost = true;
        break;
      case 'forwarded':
      case 'x-real-ip':
        if (!trust) continue;
        break;
      case 'x-forwarded-for':
        if (trust) xff = xff === undefined ? value : `${xff}, ${value}`;
        continue;
      case 'via':
        via = via === undefined ? value : `${via}, ${value}`;
        continue;
    }
    out.push(name, value);
  }
  const result = connection === undefined ? out : withoutListed(out, connection);
  if (teTrailers) result.push('te', 'trailers');
  result.push('host', info.hostRewrite ?? info.host);
  result.push('x-forwarded-for', xff === undefined ? info.clientAddress : `${xff}, ${info.clientAddress}`);
  if (!clientProto) result.push('x-forwarded-proto', info.proto);
  if (!clientHost) result.push('x-forwarded-host', info.host);
  const hop = `${info.version} evenlb`;
  result.push('via', via === undefined ? hop : `${via}, ${hop}`);
  if (info.clientCert !== undefined) result.push('x-forwarded-client-cert', info.clientCert);
  return result;
}

/**
 * The framing lines of a forwarded HTTP/1.1 request, from what the proxy parsed:
 * `transfer-encoding: chunked` or `content-length: N` (none for a bodiless request without
 * `Content-Length`). `contentLength` is -1 when the request had none.
 */
export function requestFraming(chunked: boolean, contentLength: number): string {
  if (chunked) return 'transfer-encoding: chunked\r\n';
  return contentLength >= 0 ? `content-length: ${contentLength}\r\n` : '';
}

/** Lengths of the header names `upstreamRequestHeaders` must inspect. */
const SPECIAL_LENGTHS: readonly boolean[] = (() => {
  const names = [
    ...HOP,
    'host',
    'content-length',
    'expect',
    'forwarded',
    'x-real-ip',
    'x-forwarded-proto',
    'x-forwarded-host',
    'x-forwarded-for',
    'x-forwarded-client-cert',
    'via',
  ];
  const out: boolean[] = [];
  for (const n of names) out[n.length] = true;
  return out;
})();

/** `list` without the headers a `Connection` value names. */
function withoutListed(list: string[], connection: string): string[] {
  const listed = connectionListed([connection]);
  if (listed === undefined) return list;
  const out: string[] = [];
  for (let i = 0; i < list.length; i += 2) {
    if (!listed.has((list[i] as string).toLowerCase())) out.push(list[i] as string, list[i + 1] as string);
  }
  return out;
}

type HeaderObject = Record<string, string | string[] | undefined>;

/**
 * Response headers to send downstream, from an upstream header object (the proxy's strict
 * HTTP/1.1 parser, node:http2): hop-by-hop removed (and pseudo-headers), `Via` appended.
 * Returns a fresh object. Its `content-length` (if any) was already checked by the upstream's
 * parser (`parseResponseHead`, nghttp2), and no `Connection` token can remove it.
 */
export function downstreamResponseHeaders(headers: HeaderObject, version: string): HeaderObject {
  const out: HeaderObject = {};
  const conn = headers.connection;
  const listed = conn === undefined ? undefined : connectionListed(Array.isArray(conn) ? conn : [conn]);
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || name.charCodeAt(0) === 58) continue;
    const lower = name.toLowerCase();
    if (HOP.has(lower) || listed?.has(lower)) continue;
    out[lower] = value;
  }
  const hop = `${version} evenlb`;
  const via = out.via;
  out.via = via === undefined ? hop : `${Array.isArray(via) ? via.join(', ') : via}, ${hop}`;
  return out;
}

/**
 * Response headers to send downstream from a raw list (`[name, value, ...]`: undici's Buffers
 * or the proxy's own parsed strings): hop-by-hop and `Content-Length` removed (the caller
 * writes the framing from what it parsed, see `responseContentLength`), `Via` added; a flat
 * string list for `writeHead`. Buffers are decoded as latin1, the encoding Node writes header
 * blocks in, so bytes pass through unchanged.
 */
export function downstreamRawHeaders(raw: readonly (Buffer | string)[], version: string): string[] {
  const out: string[] = [];
  let listed: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as Buffer | string;
    if (name.length === 10 && named(latin1(name), 'connection')) {
      const value = latin1(raw[i + 1] as Buffer | string);
      // The usual values name no header: skip the parse.
      if (value !== 'keep-alive' && value !== 'close') listed = connectionListed([value]);
    }
  }
  for (let i = 0; i < raw.length; i += 2) {
    const name = latin1(raw[i] as Buffer | string);
    if (isHopName(name) || (name.length === 14 && named(name, 'content-length')) || listed?.has(name.toLowerCase()))
      continue;
    out.push(name, latin1(raw[i + 1] as Buffer | string));
  }
  out.push('via', `${version} evenlb`);
  return out;
}

/**
 * The `Content-Length` of a raw response header list that a strict parser (`parseResponseHead`)
 * already accepted: the first value, or undefined when there is none or it is not digits.
 */
export function responseContentLength(raw: readonly (Buffer | string)[]): string | undefined {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as Buffer | string;
    if (name.length === 14 && named(latin1(name), 'content-length')) {
      const value = latin1(raw[i + 1] as Buffer | string).trim();
      return /^[0-9]{1,15}$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

function latin1(x: Buffer | string): string {
  return typeof x === 'string' ? x : x.toString('latin1');
}

/** `name: value\r\n` lines for a flat header list (the list's strings are latin1 bytes). */
export function serializeHeaders(list: readonly string[]): string {
  let out = '';
  for (let i = 0; i < list.length; i += 2) out += `${list[i]}: ${list[i + 1]}\r\n`;
  return out;
}
