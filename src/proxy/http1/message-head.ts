/**
 * Strict HTTP/1.1 message-head parsing for the proxy's HTTP/1.1 data path (RFC 9112). One call
 * parses a complete head from a buffer and decides the message's framing; anything a
 * request-smuggling attack relies on is refused rather than repaired:
 *
 * - lines end in CRLF; a bare CR or LF, any control character in a value, or whitespace
 *   before the colon or at the start of a line (obsolete line folding) → 400;
 * - `Content-Length` is one run of digits and appears once; `Transfer-Encoding` is exactly
 *   `chunked` and appears once; both together → 400 (a response may repeat one equal
 *   `Content-Length`, and may carry codings before a final `chunked`);
 * - an HTTP/1.1 request needs exactly one `Host`;
 * - a head longer than `maxHeaderBytes` or with more than `maxHeaderCount` fields → 431.
 *
 * Header fields come back as a flat `[name, value, ...]` list (the shape of Node's
 * `rawHeaders`), values trimmed of surrounding whitespace, bytes decoded as latin1 so they
 * pass through unchanged.
 */

/** A request head that parsed. */
export interface RequestHead {
  readonly method: string;
  readonly target: string;
  /** 1 for HTTP/1.1, 0 for HTTP/1.0. */
  readonly minor: number;
  readonly headers: string[];
  readonly host: string | undefined;
  /** Body length from `Content-Length`; -1 when there is none. */
  readonly contentLength: number;
  readonly chunked: boolean;
  /** `Connection: close` (or HTTP/1.0 without `keep-alive`). */
  readonly close: boolean;
  /**
   * The protocols asked for when the request is an upgrade (an `Upgrade` field and `upgrade`
   * listed in `Connection`); undefined otherwise (a lone `Upgrade` field means nothing).
   */
  readonly upgrade: string | undefined;
  /** An `Expect` field is present. */
  readonly expect: boolean;
  /** Bytes the head took, including the blank line (and any leading empty lines). */
  readonly length: number;
}

/** A response head that parsed. */
export interface ResponseHead {
  readonly status: number;
  readonly statusText: string;
  readonly headers: string[];
  readonly contentLength: number;
  /** The message is chunked (the last transfer coding is `chunked`). */
  readonly chunked: boolean;
  /**
   * The `Transfer-Encoding` codings, lower-cased and normalized (`gzip, chunked`), when there
   * is one. A coding that is not a bare token, or `chunked` twice, is refused; `chunked` not
   * last means the body runs until the connection closes (RFC 9112 §6.3).
   */
  readonly transferEncoding: string | undefined;
  /** The server will close the connection after this response. */
  readonly close: boolean;
  /** `Keep-Alive: timeout=N` from the server, in ms; undefined when absent. */
  readonly keepAliveMs: number | undefined;
  readonly length: number;
}

/** Why a head was refused: 400 (malformed) or 431 (too large). */
export interface HeadError {
  readonly error: 400 | 431;
  readonly reason: string;
}

const CRLFCRLF = Buffer.from('\r\n\r\n');
const LFLF = Buffer.from('\n\n');

/** tchar (RFC 9110 §5.6.2): 1 for the bytes a token may hold. */
export const TOKEN = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~") TOKEN[c.charCodeAt(0)] = 1;
for (let c = 48; c <= 57; c++) TOKEN[c] = 1;
for (let c = 65; c <= 90; c++) TOKEN[c] = 1;
for (let c = 97; c <= 122; c++) TOKEN[c] = 1;

/** field-vchar, SP, HTAB and obs-text: everything but the other control characters and DEL. */
const VALUE = new Uint8Array(256).fill(1);
for (let c = 0; c < 32; c++) VALUE[c] = 0;
VALUE[9] = 1;
VALUE[127] = 0;

const BAD_REQUEST = Object.freeze({ error: 400, reason: 'bad-request' }) as HeadError;
const TOO_LARGE = Object.freeze({ error: 431, reason: 'header-too-large' }) as HeadError;
const TOO_MANY = Object.freeze({ error: 431, reason: 'too-many-headers' }) as HeadError;

/** `buf[from..to)` is a non-empty token. (Checks read the bytes, not the decoded string: faster.) */
function isToken(buf: Buffer, from: number, to: number): boolean {
  if (from >= to) return false;
  for (let i = from; i < to; i++) if (TOKEN[buf[i] as number] !== 1) return false;
  return true;
}

/** The bytes at `buf[at..]` spell `lower` ignoring ASCII case (see `named`). */
function namedAt(buf: Buffer, at: number, lower: string): boolean {
  for (let i = 0; i < lower.length; i++) if (((buf[at + i] as number) | 0x20) !== lower.charCodeAt(i)) return false;
  return true;
}

/** Where each parsed field's name starts in the buffer (scratch: parsing is synchronous). */
let nameAt = new Int32Array(256);

/**
 * `name` equals `lower` ignoring ASCII case, for a token `name` of the same length as `lower`
 * (lower-case letters and `-` only): no string is allocated, unlike `toLowerCase()`.
 */
export function named(name: string, lower: string): boolean {
  for (let i = 0; i < lower.length; i++) if ((name.charCodeAt(i) | 0x20) !== lower.charCodeAt(i)) return false;
  return true;
}

function isDigits(s: string): boolean {
  if (s.length === 0 || s.length > 15) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** `Connection` tokens: bit 1 = close, bit 2 = keep-alive, bit 4 = upgrade. */
function connectionFlags(value: string): number {
  if (value.length === 10 && named(value, 'keep-alive')) return 2;
  if (value.length === 5 && named(value, 'close')) return 1;
  let flags = 0;
  for (const part of value.split(',')) {
    const t = part.trim().toLowerCase();
    if (t === 'close') flags |= 1;
    else if (t === 'keep-alive') flags |= 2;
    else if (t === 'upgrade') flags |= 4;
  }
  return flags;
}

let lastKeepAlive = '';
let lastKeepAliveMs: number | undefined;

/** `timeout=N` of a `Keep-Alive` value, in ms (servers repeat one value: the last is cached). */
function keepAliveTimeoutMs(value: string): number | undefined {
  if (value !== lastKeepAlive) {
    const m = /(?:^|[,;\s])timeout\s*=\s*(\d+)/i.exec(value);
    lastKeepAlive = value;
    lastKeepAliveMs = m === null ? undefined : Number(m[1]) * 1000;
  }
  return lastKeepAliveMs;
}

/** Where the head ends (index of its blank line), or -1 / a HeadError when there is none yet. */
function headEnd(buf: Buffer, start: number, maxBytes: number): number | HeadError {
  const end = buf.indexOf(CRLFCRLF, start);
  if (end < 0) {
    // The blank line does not count toward the limit: up to 3 of its bytes may be here.
    if (buf.length - start > maxBytes + 3) return TOO_LARGE;
    // A head ended by bare LFs would otherwise wait for its timeout.
    if (buf.indexOf(LFLF, start) >= 0) return BAD_REQUEST;
    return -1;
  }
  if (end - start > maxBytes) return TOO_LARGE;
  return end;
}

/**
 * Parses the header lines in `s[from..end)` into `out`; `s[i]` is the byte `buf[base + i]`.
 * Records each name's buffer offset in `nameAt`. Returns 0 = fine, 1 = malformed, 2 = too many.
 */
function parseFields(
  buf: Buffer,
  base: number,
  s: string,
  from: number,
  end: number,
  maxCount: number,
  out: string[],
): number {
  let pos = from;
  let count = 0;
  while (pos < end) {
    let eol = s.indexOf('\r\n', pos);
    if (eol < 0 || eol > end) eol = end;
    const colon = s.indexOf(':', pos);
    if (colon < 0 || colon >= eol || !isToken(buf, base + pos, base + colon)) return 1;
    let vs = base + colon + 1;
    let ve = base + eol;
    while (vs < ve && (buf[vs] === 32 || buf[vs] === 9)) vs++;
    while (ve > vs && (buf[ve - 1] === 32 || buf[ve - 1] === 9)) ve--;
    for (let i = vs; i < ve; i++) if (VALUE[buf[i] as number] !== 1) return 1;
    if (count >= maxCount) return 2;
    if (count >= nameAt.length) {
      const grown = new Int32Array(nameAt.length * 2);
      grown.set(nameAt);
      nameAt = grown;
    }
    nameAt[count++] = base + pos;
    out.push(s.slice(pos, colon), s.slice(vs - base, ve - base));
    pos = eol + 2;
  }
  return 0;
}

/**
 * Parses the request head at `buf[start..]`. Returns undefined while the head is incomplete,
 * a `HeadError` when it must be refused.
 */
export function parseRequestHead(
  buf: Buffer,
  start: number,
  maxHeaderBytes: number,
  maxHeaderCount: number,
): RequestHead | HeadError | undefined {
  let from = start;
  // RFC 9112 §2.2: ignore at least one empty line before the request line.
  while (from + 1 < buf.length && buf[from] === 13 && buf[from + 1] === 10 && from - start < 8) from += 2;
  const end = headEnd(buf, from, maxHeaderBytes);
  if (typeof end !== 'number') return end;
  if (end < 0) return undefined;
  const s = buf.toString('latin1', from, end + 2);
  const lineEnd = s.indexOf('\r\n');
  const sp1 = s.indexOf(' ');
  const sp2 = sp1 < 0 ? -1 : s.indexOf(' ', sp1 + 1);
  if (sp1 <= 0 || sp2 < 0 || sp2 >= lineEnd || sp2 === sp1 + 1) return BAD_REQUEST;
  if (!isToken(buf, from, from + sp1)) return BAD_REQUEST;
  for (let i = from + sp1 + 1; i < from + sp2; i++) {
    const c = buf[i] as number;
    if (c <= 32 || c >= 127) return BAD_REQUEST;
  }
  const version = s.slice(sp2 + 1, lineEnd);
  let minor: number;
  if (version === 'HTTP/1.1') minor = 1;
  else if (version === 'HTTP/1.0') minor = 0;
  else return BAD_REQUEST;
  const headers: string[] = [];
  const bad = parseFields(buf, from, s, lineEnd + 2, s.length - 2, maxHeaderCount, headers);
  if (bad !== 0) return bad === 2 ? TOO_MANY : BAD_REQUEST;
  let host: string | undefined;
  let hosts = 0;
  let contentLength = -1;
  let cls = 0;
  let tes = 0;
  let chunked = false;
  let conn = 0;
  let upgrade: string | undefined;
  let expect = false;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    switch (name.length) {
      case 4:
        if (namedAt(buf, nameAt[i >> 1] as number, 'host')) {
          hosts++;
          host = headers[i + 1] as string;
        }
        break;
      case 14:
        if (namedAt(buf, nameAt[i >> 1] as number, 'content-length')) {
          cls++;
          const v = headers[i + 1] as string;
          if (!isDigits(v)) return BAD_REQUEST;
          contentLength = Number(v);
        }
        break;
      case 17:
        if (namedAt(buf, nameAt[i >> 1] as number, 'transfer-encoding')) {
          tes++;
          if ((headers[i + 1] as string).toLowerCase() !== 'chunked') return BAD_REQUEST;
          chunked = true;
        }
        break;
      case 10:
        if (namedAt(buf, nameAt[i >> 1] as number, 'connection')) conn |= connectionFlags(headers[i + 1] as string);
        break;
      case 7:
        if (namedAt(buf, nameAt[i >> 1] as number, 'upgrade'))
          upgrade = upgrade === undefined ? headers[i + 1] : `${upgrade}, ${headers[i + 1]}`;
        break;
      case 6:
        if (namedAt(buf, nameAt[i >> 1] as number, 'expect')) expect = true;
        break;
    }
  }
  if (cls > 1 || tes > 1 || (cls > 0 && tes > 0)) return BAD_REQUEST;
  if (hosts > 1 || (minor === 1 && hosts === 0)) return BAD_REQUEST;
  return {
    method: s.slice(0, sp1),
    target: s.slice(sp1 + 1, sp2),
    minor,
    headers,
    host,
    contentLength,
    chunked,
    close: (conn & 1) !== 0 || (minor === 0 && (conn & 2) === 0),
    upgrade: (conn & 4) !== 0 ? upgrade : undefined,
    expect,
    length: end + 4 - start,
  };
}

/** Parses the response head at `buf[start..]`; undefined while incomplete. */
export function parseResponseHead(
  buf: Buffer,
  start: number,
  maxHeaderBytes: number,
  maxHeaderCount: number,
): ResponseHead | HeadError | undefined {
  const end = headEnd(buf, start, maxHeaderBytes);
  if (typeof end !== 'number') return end;
  if (end < 0) return undefined;
  const s = buf.toString('latin1', start, end + 2);
  const lineEnd = s.indexOf('\r\n');
  // HTTP/1.x SP 3DIGIT [SP reason]
  if (lineEnd < 12 || !s.startsWith('HTTP/1.') || s.charCodeAt(8) !== 32) return BAD_REQUEST;
  const minor = s.charCodeAt(7) - 48;
  if (minor !== 0 && minor !== 1) return BAD_REQUEST;
  if (!isDigits(s.slice(9, 12))) return BAD_REQUEST;
  const status = Number(s.slice(9, 12));
  if (status < 100) return BAD_REQUEST;
  if (lineEnd > 12 && s.charCodeAt(12) !== 32) return BAD_REQUEST;
  const statusText = lineEnd > 13 ? s.slice(13, lineEnd) : '';
  for (let i = start + 13; i < start + lineEnd; i++) if (VALUE[buf[i] as number] !== 1) return BAD_REQUEST;
  const headers: string[] = [];
  const bad = parseFields(buf, start, s, lineEnd + 2, s.length - 2, maxHeaderCount, headers);
  if (bad !== 0) return bad === 2 ? TOO_MANY : BAD_REQUEST;
  let contentLength = -1;
  let transferEncoding: string | undefined;
  let conn = 0;
  let keepAliveMs: number | undefined;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    const value = headers[i + 1] as string;
    switch (name.length) {
      case 14:
        if (namedAt(buf, nameAt[i >> 1] as number, 'content-length')) {
          if (!isDigits(value)) return BAD_REQUEST;
          const n = Number(value);
          if (contentLength >= 0 && n !== contentLength) return BAD_REQUEST;
          contentLength = n;
        }
        break;
      case 17:
        if (namedAt(buf, nameAt[i >> 1] as number, 'transfer-encoding')) {
          transferEncoding = transferEncoding === undefined ? value : `${transferEncoding}, ${value}`;
        }
        break;
      case 10:
        if (namedAt(buf, nameAt[i >> 1] as number, 'connection')) conn |= connectionFlags(value);
        else if (namedAt(buf, nameAt[i >> 1] as number, 'keep-alive')) keepAliveMs = keepAliveTimeoutMs(value);
        break;
    }
  }
  let chunked = false;
  if (transferEncoding !== undefined) {
    if (contentLength >= 0) return BAD_REQUEST;
    if (transferEncoding.length === 7 && named(transferEncoding, 'chunked')) {
      chunked = true;
      transferEncoding = 'chunked';
    } else {
      // Each coding a bare token, `chunked` at most once (RFC 9112 §6.1): the list is
      // rewritten normalized, so what the client reads is what the proxy parsed.
      const codings = transferEncoding.toLowerCase().split(',');
      let chunkedSeen = false;
      for (let i = 0; i < codings.length; i++) {
        const c = (codings[i] as string).trim();
        if (!/^[-!#$%&'*+.^_`|~0-9a-z]+$/.test(c)) return BAD_REQUEST;
        if (c === 'chunked') {
          if (chunkedSeen) return BAD_REQUEST;
          chunkedSeen = true;
        }
        codings[i] = c;
      }
      chunked = codings[codings.length - 1] === 'chunked';
      transferEncoding = codings.join(', ');
    }
  }
  return {
    status,
    statusText,
    headers,
    contentLength,
    chunked,
    transferEncoding,
    close: (conn & 1) !== 0 || (minor === 0 && (conn & 2) === 0),
    keepAliveMs,
    length: end + 4 - start,
  };
}

/** True when `x` is a `HeadError`. */
export function isHeadError(x: object): x is HeadError {
  return (x as { error?: unknown }).error !== undefined;
}
