/**
 * Hop-by-hop header handling (RFC 9110 §7.6.1) and the forwarding headers. A proxy must not
 * pass on `Connection`, the headers `Connection` lists, `Keep-Alive`, `Proxy-*`, `TE` (except
 * `trailers`), `Transfer-Encoding` and `Upgrade`; HTTP/2 forbids them outright. Requests get
 * `X-Forwarded-For` (appended), `X-Forwarded-Proto`, `X-Forwarded-Host` and `Via`. Everything
 * works on flat `[name, value, ...]` arrays (Node's `rawHeaders`, undici's header arrays) so the
 * hot path allocates one array per message.
 */
import { named } from './http1/message-head.js';

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

/** Names listed in `Connection` header values, lower-cased; undefined when there are none. */
function connectionListed(values: readonly string[]): Set<string> | undefined {
  let out: Set<string> | undefined;
  for (const v of values) {
    for (const part of v.split(',')) {
      const name = part.trim().toLowerCase();
      if (name === '' || name === 'close' || name === 'keep-alive') continue;
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
}

/**
 * Request headers to send upstream, from the client's raw header list: hop-by-hop removed,
 * `TE: trailers` kept, forwarding headers added, `host` set. HTTP/2 pseudo-headers are skipped.
 */
export function upstreamRequestHeaders(raw: readonly string[], info: ForwardInfo): string[] {
  const out: string[] = [];
  let connection: string | undefined;
  let xff: string | undefined;
  let via: string | undefined;
  let teTrailers = false;
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
      case 'expect': // the proxy answered `100-continue` itself
      case 'x-forwarded-proto':
      case 'x-forwarded-host':
      case 'x-forwarded-client-cert': // only the proxy vouches for a client certificate
        continue;
      case 'x-forwarded-for':
        xff = xff === undefined ? value : `${xff}, ${value}`;
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
  result.push('x-forwarded-proto', info.proto);
  result.push('x-forwarded-host', info.host);
  const hop = `${info.version} evenlb`;
  result.push('via', via === undefined ? hop : `${via}, ${hop}`);
  if (info.clientCert !== undefined) result.push('x-forwarded-client-cert', info.clientCert);
  return result;
}

/** Lengths of the header names `upstreamRequestHeaders` must inspect. */
const SPECIAL_LENGTHS: readonly boolean[] = (() => {
  const names = [
    ...HOP,
    'host',
    'expect',
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
 * Response headers to send downstream, from an upstream header object (undici / node:http2):
 * hop-by-hop removed (and pseudo-headers), `Via` appended. Returns a fresh object.
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
 * or the proxy's own parsed strings): hop-by-hop removed, `Via` added; a flat string list for
 * `writeHead`. Buffers are decoded as latin1, the encoding Node writes header blocks in, so
 * bytes pass through unchanged.
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
    if (isHopName(name) || listed?.has(name.toLowerCase())) continue;
    out.push(name, latin1(raw[i + 1] as Buffer | string));
  }
  out.push('via', `${version} evenlb`);
  return out;
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
