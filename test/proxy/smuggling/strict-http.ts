/**
 * A small, deliberately strict HTTP/1.1 parser for the smuggling corpus, independent of the
 * proxy's own parser: it reads a whole byte stream (what a backend received on one socket, or
 * what a client received on its connection) and returns the complete messages in it, or says
 * where the stream stops making sense. Strict means: CRLF line ends only, token header names
 * with no whitespace before the colon, no control bytes in values, one Content-Length (digits)
 * or one `Transfer-Encoding: chunked` and never both, well-formed chunks.
 */

export interface ParsedMessage {
  /** Request: method; response: status as a string. */
  readonly first: string;
  /** Request: target; response: reason phrase. */
  readonly second: string;
  readonly version: string;
  /** Lower-cased names. */
  readonly headers: [string, string][];
  readonly body: Buffer;
}

export interface ParseResult {
  readonly messages: ParsedMessage[];
  /** Why the stream stopped parsing (undefined: it parsed to its end or waits for more bytes). */
  readonly error: string | undefined;
  /** Bytes after the last complete message (an incomplete one, or nothing). */
  readonly rest: number;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

export function header(m: ParsedMessage, name: string): string | undefined {
  return m.headers.find(([n]) => n === name)?.[1];
}

interface Head {
  readonly start: string[];
  readonly headers: [string, string][];
  readonly end: number;
}

/** One head at `pos`: undefined while incomplete, a string when malformed. */
function readHead(buf: Buffer, pos: number): Head | string | undefined {
  const end = buf.indexOf('\r\n\r\n', pos, 'latin1');
  if (end < 0) return buf.length - pos > 65536 ? 'head too large' : undefined;
  const text = buf.toString('latin1', pos, end);
  const lines = text.split('\r\n');
  for (const l of lines) if (/[\r\n\0]/.test(l)) return 'bare CR/LF or NUL in head';
  const first = lines[0] as string;
  const start = first.split(' ');
  const headers: [string, string][] = [];
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) return `malformed header line ${JSON.stringify(line)}`;
    const name = line.slice(0, colon);
    if (!TOKEN.test(name)) return `bad header name ${JSON.stringify(name)}`;
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
    if (/[\x00-\x08\x0a-\x1f\x7f]/.test(value)) return `control byte in ${name}`;
    headers.push([name.toLowerCase(), value]);
  }
  return { start, headers, end: end + 4 };
}

type Framing = { kind: 'length'; n: number } | { kind: 'chunked' } | { kind: 'close' } | { kind: 'none' };

function framingOf(headers: [string, string][], isRequest: boolean): Framing | string {
  const cls = headers.filter(([n]) => n === 'content-length').map(([, v]) => v);
  const tes = headers.filter(([n]) => n === 'transfer-encoding').map(([, v]) => v);
  if (cls.length > 1) return 'more than one Content-Length';
  if (tes.length > 1) return 'more than one Transfer-Encoding';
  if (cls.length === 1 && tes.length === 1) return 'Content-Length and Transfer-Encoding';
  if (tes.length === 1) {
    const codings = (tes[0] as string)
      .toLowerCase()
      .split(',')
      .map((c) => c.trim());
    if (codings.filter((c) => c === 'chunked').length > 1) return 'chunked twice';
    if (codings[codings.length - 1] === 'chunked') return { kind: 'chunked' };
    return isRequest ? 'request Transfer-Encoding not ending in chunked' : { kind: 'close' };
  }
  if (cls.length === 1) {
    if (!/^[0-9]{1,15}$/.test(cls[0] as string)) return `bad Content-Length ${JSON.stringify(cls[0])}`;
    return { kind: 'length', n: Number(cls[0]) };
  }
  return isRequest ? { kind: 'none' } : { kind: 'close' };
}

/** A chunked body at `pos`: [body, end] when complete, undefined when incomplete, a string when malformed. */
function readChunked(buf: Buffer, pos: number): [Buffer, number] | string | undefined {
  const parts: Buffer[] = [];
  let p = pos;
  for (;;) {
    const eol = buf.indexOf('\r\n', p, 'latin1');
    if (eol < 0) return buf.length - p > 1024 ? 'chunk size line too long' : undefined;
    const line = buf.toString('latin1', p, eol);
    const m = /^([0-9a-fA-F]{1,12})(;[!#$%&'*+\-.^_`|~0-9A-Za-z=]*)*$/.exec(line);
    if (m === null) return `bad chunk size line ${JSON.stringify(line)}`;
    const size = Number.parseInt(m[1] as string, 16);
    p = eol + 2;
    if (size === 0) {
      // Trailer section up to the empty line.
      for (;;) {
        const t = buf.indexOf('\r\n', p, 'latin1');
        if (t < 0) return undefined;
        if (t === p) return [Buffer.concat(parts), t + 2];
        const tl = buf.toString('latin1', p, t);
        if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+:/.test(tl)) return `bad trailer ${JSON.stringify(tl)}`;
        p = t + 2;
      }
    }
    if (buf.length < p + size + 2) return undefined;
    if (buf[p + size] !== 13 || buf[p + size + 1] !== 10) return 'chunk data not followed by CRLF';
    parts.push(buf.subarray(p, p + size));
    p += size + 2;
  }
}

/** Parses every complete request in `buf`. */
export function parseRequests(buf: Buffer): ParseResult {
  const messages: ParsedMessage[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const head = readHead(buf, pos);
    if (head === undefined) return { messages, error: undefined, rest: buf.length - pos };
    if (typeof head === 'string') return { messages, error: head, rest: buf.length - pos };
    const [method, target, version, ...more] = head.start;
    if (more.length > 0 || method === undefined || target === undefined || version !== 'HTTP/1.1')
      return { messages, error: `bad request line ${JSON.stringify(head.start.join(' '))}`, rest: buf.length - pos };
    if (!TOKEN.test(method)) return { messages, error: 'bad method', rest: buf.length - pos };
    if (head.headers.filter(([n]) => n === 'host').length !== 1)
      return { messages, error: 'not exactly one Host', rest: buf.length - pos };
    const framing = framingOf(head.headers, true);
    if (typeof framing === 'string') return { messages, error: framing, rest: buf.length - pos };
    let body: Buffer = Buffer.alloc(0);
    let end = head.end;
    if (framing.kind === 'length') {
      if (buf.length < head.end + framing.n) return { messages, error: undefined, rest: buf.length - pos };
      body = buf.subarray(head.end, head.end + framing.n);
      end = head.end + framing.n;
    } else if (framing.kind === 'chunked') {
      const c = readChunked(buf, head.end);
      if (c === undefined) return { messages, error: undefined, rest: buf.length - pos };
      if (typeof c === 'string') return { messages, error: c, rest: buf.length - pos };
      [body, end] = c;
    }
    messages.push({ first: method, second: target, version, headers: head.headers, body });
    pos = end;
  }
  return { messages, error: undefined, rest: 0 };
}

/**
 * Parses the responses in `buf`, a client connection's whole received stream (`ended`: the
 * connection closed, so a close-delimited body ends there). `methods` are the request methods
 * in order (a HEAD response has no body). 1xx responses are skipped.
 */
export function parseResponses(buf: Buffer, methods: readonly string[], ended: boolean): ParseResult {
  const messages: ParsedMessage[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const head = readHead(buf, pos);
    if (head === undefined) return { messages, error: ended ? 'truncated head' : undefined, rest: buf.length - pos };
    if (typeof head === 'string') return { messages, error: head, rest: buf.length - pos };
    const line = buf.toString('latin1', pos, buf.indexOf('\r\n', pos, 'latin1'));
    const m = /^(HTTP\/1\.[01]) ([0-9]{3})(?: (.*))?$/.exec(line);
    if (m === null) return { messages, error: `bad status line ${JSON.stringify(line)}`, rest: buf.length - pos };
    const status = Number(m[2]);
    if (status < 200) {
      pos = head.end;
      continue;
    }
    const method = methods[messages.length] ?? 'GET';
    let body: Buffer = Buffer.alloc(0);
    let end = head.end;
    if (method !== 'HEAD' && status !== 204 && status !== 304) {
      const framing = framingOf(head.headers, false);
      if (typeof framing === 'string') return { messages, error: framing, rest: buf.length - pos };
      if (framing.kind === 'length') {
        if (buf.length < head.end + framing.n)
          return { messages, error: ended ? 'truncated body' : undefined, rest: buf.length - pos };
        body = buf.subarray(head.end, head.end + framing.n);
        end = head.end + framing.n;
      } else if (framing.kind === 'chunked') {
        const c = readChunked(buf, head.end);
        if (c === undefined) return { messages, error: ended ? 'truncated chunked body' : undefined, rest: 0 };
        if (typeof c === 'string') return { messages, error: c, rest: buf.length - pos };
        [body, end] = c;
      } else {
        // Close-delimited: the rest of the stream, and the connection must end there.
        if (!ended) return { messages, error: undefined, rest: buf.length - pos };
        body = buf.subarray(head.end);
        end = buf.length;
      }
    }
    messages.push({ first: m[2] as string, second: m[3] ?? '', version: m[1] as string, headers: head.headers, body });
    pos = end;
  }
  return { messages, error: undefined, rest: 0 };
}
