/**
 * Raw-byte request cases for the smuggling corpus: CL/TE ambiguity, `Connection` naming
 * framing headers (issue #13's two unsafe cases and variants), Transfer-Encoding obfuscation,
 * chunk syntax, header and request-line syntax, Host forms, pipelining, forged forwarding
 * headers, and the HTTP/1.0 / `Expect` requests that take the node:http path. Every smuggling
 * attempt carries `GET /smuggled`: the backend must never parse it as a request. `methods` lists
 * the requests the client really sent, in order (those the backend may see, each with its own
 * `x-seq`); `kinds` says which listeners the case runs on.
 */

export type Kind = 'raw' | 'tls' | 'fallback' | 'h2';

export interface RequestCase {
  readonly name: string;
  readonly kinds: readonly Kind[];
  /** The bytes the attacker sends, for case id `id`. */
  readonly bytes: (id: string) => string;
  /** The methods of the requests the client sent, in order. */
  readonly methods: readonly string[];
}

export const SMUGGLED = 'GET /smuggled HTTP/1.1\r\nHost: app.test\r\n\r\n';

/** The corpus' identifying headers for request `seq` of case `id`. */
export function ids(id: string, seq: number): string {
  return `x-case: ${id}\r\nx-seq: ${seq}\r\n`;
}

const chunk = (s: string): string => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`;
const len = (s: string): number => Buffer.byteLength(s);

/** A request: `GET /a` by default, Host app.test, `extra` header lines, then `body` as is. */
function req(
  id: string,
  seq: number,
  opts: { method?: string; path?: string; extra?: string; body?: string; version?: string; host?: string } = {},
): string {
  const host = opts.host === undefined ? 'Host: app.test\r\n' : opts.host;
  return `${opts.method ?? 'GET'} ${opts.path ?? `/p${seq}`} ${opts.version ?? 'HTTP/1.1'}\r\n${host}${ids(id, seq)}${opts.extra ?? ''}\r\n${opts.body ?? ''}`;
}

const H1: readonly Kind[] = ['raw', 'tls'];
const POST = ['POST'];

/** A POST whose body is a smuggled request, framed by `framing` (header lines) and `body`. */
function post(
  name: string,
  framing: (body: string) => string,
  body = SMUGGLED,
  kinds = H1,
  follow = true,
): RequestCase {
  return {
    name,
    kinds,
    bytes: (id) => req(id, 1, { method: 'POST', extra: framing(body), body }) + (follow ? req(id, 2) : ''),
    methods: follow ? ['POST', 'GET'] : POST,
  };
}

const cl = (b: string): string => `Content-Length: ${len(b)}\r\n`;
const te = 'Transfer-Encoding: chunked\r\n';
const chunkedSmuggle = `${chunk(SMUGGLED)}0\r\n\r\n`;

export const REQUEST_CASES: readonly RequestCase[] = [
  { name: 'baseline GET', kinds: H1, bytes: (id) => req(id, 1), methods: ['GET'] },
  {
    name: 'three pipelined GETs',
    kinds: H1,
    bytes: (id) => req(id, 1) + req(id, 2) + req(id, 3),
    methods: ['GET', 'GET', 'GET'],
  },
  {
    name: 'HEAD then GET',
    kinds: H1,
    bytes: (id) => req(id, 1, { method: 'HEAD' }) + req(id, 2),
    methods: ['HEAD', 'GET'],
  },
  post('a body that looks like a request, by Content-Length', cl),
  post('a body that looks like a request, chunked', () => te, chunkedSmuggle),
  // Issue #13, unsafe case 1 and variants: Connection must not remove the framing.
  post('Connection: content-length', (b) => `Connection: content-length\r\n${cl(b)}`),
  post(
    'Connection: close, Content-Length',
    (b) => `Connection: close, Content-Length\r\n${cl(b)}`,
    SMUGGLED,
    H1,
    false,
  ),
  post('Connection: CONTENT-LENGTH (case)', (b) => `Connection: CONTENT-LENGTH\r\n${cl(b)}`),
  post('Connection: keep-alive,content-length (no space)', (b) => `Connection: keep-alive,content-length\r\n${cl(b)}`),
  post(
    'two Connection fields, one naming content-length',
    (b) => `Connection: keep-alive\r\n${cl(b)}Connection: content-length\r\n`,
  ),
  post(
    'Connection: transfer-encoding with a chunked body',
    () => `Connection: transfer-encoding\r\n${te}`,
    chunkedSmuggle,
  ),
  post('Connection: host, x-forwarded-for, via', (b) => `Connection: host, x-forwarded-for, via\r\n${cl(b)}`),
  post('Connection: content-length, upgrade without Upgrade', (b) => `Connection: content-length, upgrade\r\n${cl(b)}`),
  // CL / TE ambiguity.
  post('Content-Length twice, different', (b) => `Content-Length: 0\r\n${cl(b)}`),
  post('Content-Length twice, equal', (b) => `${cl(b)}${cl(b)}`),
  post('CL.TE', (b) => `${cl(b)}${te}`, chunkedSmuggle),
  post('TE.CL', () => `${te}Content-Length: 4\r\n`, chunkedSmuggle),
  post('TE with leading space', () => 'Transfer-Encoding:  chunked\r\n', chunkedSmuggle),
  post('TE Chunked (case)', () => 'Transfer-Encoding: Chunked\r\n', chunkedSmuggle),
  post('TE xchunked + CL', (b) => `Transfer-Encoding: xchunked\r\n${cl(b)}`),
  post('TE chunked, identity', () => 'Transfer-Encoding: chunked, identity\r\n', chunkedSmuggle),
  post('TE identity, chunked', () => 'Transfer-Encoding: identity, chunked\r\n', chunkedSmuggle),
  post('TE gzip, chunked', () => 'Transfer-Encoding: gzip, chunked\r\n', chunkedSmuggle),
  post('TE twice', () => `${te}${te}`, chunkedSmuggle),
  post('TE with space before the colon + CL', (b) => `Transfer-Encoding : chunked\r\n${cl(b)}`),
  post('TE with tab before the colon', () => 'Transfer-Encoding\t: chunked\r\n', chunkedSmuggle),
  post('TE folded (obs-fold)', () => 'Transfer-Encoding:\r\n chunked\r\n', chunkedSmuggle),
  post('TE with a vertical tab', () => 'Transfer-Encoding: \x0bchunked\r\n', chunkedSmuggle),
  post('Transfer_Encoding (a different name) + CL', (b) => `Transfer_Encoding: chunked\r\n${cl(b)}`),
  post('TE in a later line after an empty-named header', () => `: x\r\n${te}`, chunkedSmuggle),
  // Content-Length syntax.
  post('CL +N', (b) => `Content-Length: +${len(b)}\r\n`),
  post('CL "N N"', (b) => `Content-Length: ${len(b)} ${len(b)}\r\n`),
  post('CL list "N, N"', (b) => `Content-Length: ${len(b)}, ${len(b)}\r\n`),
  post('CL hex', (b) => `Content-Length: 0x${len(b).toString(16)}\r\n`),
  post('CL negative', () => 'Content-Length: -1\r\n'),
  post('CL leading zeros', (b) => `Content-Length: 000${len(b)}\r\n`),
  post('CL too many digits', () => 'Content-Length: 1000000000000000000000\r\n'),
  // Chunk syntax.
  post('chunk size 0x', () => te, `0x${Buffer.byteLength(SMUGGLED).toString(16)}\r\n${SMUGGLED}\r\n0\r\n\r\n`),
  post('chunk size with a space', () => te, `${Buffer.byteLength(SMUGGLED).toString(16)} \r\n${SMUGGLED}\r\n0\r\n\r\n`),
  post('chunk size overflow', () => te, `ffffffffffffffffffff\r\n${SMUGGLED}\r\n0\r\n\r\n`),
  post('chunk size negative', () => te, `-1\r\n${SMUGGLED}\r\n0\r\n\r\n`),
  post('chunk data not followed by CRLF', () => te, `3\r\nabc${SMUGGLED}0\r\n\r\n`),
  post('chunk lines ended by LF', () => te, `3\nabc\n0\n\n${SMUGGLED}`),
  post('chunk extension with a quoted CRLF', () => te, `3;x="a\r\nb"\r\nabc\r\n0\r\n\r\n`),
  post('chunk extension, bare', () => te, `3;ext\r\nabc\r\n0\r\n\r\n`),
  post('smuggled request as a trailer', () => te, `3\r\nabc\r\n0\r\n${SMUGGLED}`),
  post('legit trailers', () => te, '3\r\nabc\r\n0\r\nx-t: 1\r\n\r\n'),
  // Head syntax.
  {
    name: 'bare LF line ends',
    kinds: H1,
    bytes: (id) => req(id, 1).replaceAll('\r\n', '\n') + SMUGGLED,
    methods: ['GET'],
  },
  {
    name: 'bare CR in a value',
    kinds: H1,
    bytes: (id) => req(id, 1, { extra: 'x-a: 1\r2\r\n' }) + SMUGGLED,
    methods: ['GET'],
  },
  {
    name: 'NUL in a value',
    kinds: H1,
    bytes: (id) => req(id, 1, { extra: 'x-a: 1\u00002\r\n' }) + SMUGGLED,
    methods: ['GET'],
  },
  {
    name: 'space before colon in Host',
    kinds: H1,
    bytes: (id) => req(id, 1, { host: 'Host : app.test\r\n' }),
    methods: ['GET'],
  },
  {
    name: 'two Host fields',
    kinds: H1,
    bytes: (id) => req(id, 1, { host: 'Host: app.test\r\nHost: evil.test\r\n' }),
    methods: ['GET'],
  },
  {
    name: 'Host with userinfo',
    kinds: H1,
    bytes: (id) => req(id, 1, { host: 'Host: app.test:80@evil.test\r\n' }),
    methods: ['GET'],
  },
  {
    name: 'Host with a path',
    kinds: H1,
    bytes: (id) => req(id, 1, { host: 'Host: app.test/admin\r\n' }),
    methods: ['GET'],
  },
  { name: 'empty Host', kinds: H1, bytes: (id) => req(id, 1, { host: 'Host:\r\n' }), methods: ['GET'] },
  { name: 'no Host', kinds: H1, bytes: (id) => req(id, 1, { host: '' }), methods: ['GET'] },
  {
    name: 'absolute-form target',
    kinds: H1,
    bytes: (id) => req(id, 1, { path: 'http://app.test/abs' }) + req(id, 2),
    methods: ['GET', 'GET'],
  },
  {
    name: 'absolute-form with userinfo',
    kinds: H1,
    bytes: (id) => req(id, 1, { path: 'http://x@app.test/abs' }),
    methods: ['GET'],
  },
  { name: 'two spaces in the request line', kinds: H1, bytes: (id) => req(id, 1, { path: ' /a' }), methods: ['GET'] },
  { name: 'HTTP/1.2', kinds: H1, bytes: (id) => req(id, 1, { version: 'HTTP/1.2' }), methods: ['GET'] },
  {
    name: 'extra word in the request line',
    kinds: H1,
    bytes: (id) => req(id, 1, { version: 'HTTP/1.1 x' }),
    methods: ['GET'],
  },
  { name: 'leading empty lines', kinds: H1, bytes: (id) => `\r\n\r\n${req(id, 1)}`, methods: ['GET'] },
  {
    name: 'CONNECT',
    kinds: H1,
    bytes: (id) => req(id, 1, { method: 'CONNECT', path: 'app.test:443' }) + SMUGGLED,
    methods: ['CONNECT'],
  },
  {
    name: 'oversized head',
    kinds: H1,
    bytes: (id) => req(id, 1, { extra: `x-big: ${'a'.repeat(70_000)}\r\n` }) + SMUGGLED,
    methods: ['GET'],
  },
  post('websocket upgrade with a body', (b) => `Connection: upgrade\r\nUpgrade: websocket\r\n${cl(b)}`),
  post(
    'h2c upgrade with a body (ignored upgrade)',
    (b) =>
      `Connection: upgrade, http2-settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n${cl(b)}`,
  ),
  post(
    'forged forwarding headers',
    (b) =>
      `X-Forwarded-For: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\nX-Real-IP: 6.6.6.6\r\nX-Forwarded-Host: evil.test\r\n${cl(b)}`,
  ),
  // The node:http path: HTTP/1.0 and Expect.
  {
    name: 'Expect: 100-continue, body is a request',
    kinds: ['fallback'],
    bytes: (id) =>
      req(id, 1, { method: 'POST', extra: `Expect: 100-continue\r\n${cl(SMUGGLED)}`, body: SMUGGLED }) + req(id, 2),
    methods: ['POST', 'GET'],
  },
  {
    name: 'Expect + Connection: content-length',
    kinds: ['fallback'],
    bytes: (id) =>
      req(id, 1, {
        method: 'POST',
        extra: `Expect: 100-continue\r\nConnection: content-length\r\n${cl(SMUGGLED)}`,
        body: SMUGGLED,
      }) + req(id, 2),
    methods: ['POST', 'GET'],
  },
  {
    name: 'Expect + chunked + Connection: transfer-encoding',
    kinds: ['fallback'],
    bytes: (id) =>
      req(id, 1, {
        method: 'POST',
        extra: `Expect: 100-continue\r\nConnection: transfer-encoding\r\n${te}`,
        body: chunkedSmuggle,
      }) + req(id, 2),
    methods: ['POST', 'GET'],
  },
  {
    name: 'Expect + CL.TE',
    kinds: ['fallback'],
    bytes: (id) =>
      req(id, 1, { method: 'POST', extra: `Expect: 100-continue\r\n${cl(chunkedSmuggle)}${te}`, body: chunkedSmuggle }),
    methods: POST,
  },
  {
    name: 'Expect + two Content-Length',
    kinds: ['fallback'],
    bytes: (id) =>
      req(id, 1, {
        method: 'POST',
        extra: `Expect: 100-continue\r\nContent-Length: 0\r\n${cl(SMUGGLED)}`,
        body: SMUGGLED,
      }),
    methods: POST,
  },
  {
    name: 'Expect + Host with userinfo',
    kinds: ['fallback'],
    bytes: (id) =>
      req(id, 1, {
        method: 'POST',
        host: 'Host: app.test@evil.test\r\n',
        extra: 'Expect: 100-continue\r\nContent-Length: 0\r\n',
      }),
    methods: POST,
  },
  {
    name: 'HTTP/1.0 keep-alive, body is a request',
    kinds: ['fallback'],
    bytes: (id) =>
      req(id, 1, {
        method: 'POST',
        version: 'HTTP/1.0',
        extra: `Connection: keep-alive\r\n${cl(SMUGGLED)}`,
        body: SMUGGLED,
      }) + req(id, 2, { version: 'HTTP/1.0', extra: 'Connection: keep-alive\r\n' }),
    methods: ['POST', 'GET'],
  },
  {
    name: 'HTTP/1.0 keep-alive + Connection: content-length',
    kinds: ['fallback'],
    bytes: (id) =>
      req(id, 1, {
        method: 'POST',
        version: 'HTTP/1.0',
        extra: `Connection: keep-alive, content-length\r\n${cl(SMUGGLED)}`,
        body: SMUGGLED,
      }) + req(id, 2, { version: 'HTTP/1.0', extra: 'Connection: keep-alive\r\n' }),
    methods: ['POST', 'GET'],
  },
  {
    // RFC 9112 §6.1: the connection closes after the response; the second request is not served.
    name: 'HTTP/1.0 keep-alive + Transfer-Encoding',
    kinds: ['fallback'],
    bytes: (id) =>
      req(id, 1, {
        method: 'POST',
        version: 'HTTP/1.0',
        extra: `Connection: keep-alive\r\n${te}`,
        body: chunkedSmuggle,
      }) + req(id, 2, { version: 'HTTP/1.0', extra: 'Connection: keep-alive\r\n' }),
    methods: ['POST'],
  },
  {
    name: 'HTTP/1.0 without keep-alive, then a second request',
    kinds: ['fallback'],
    bytes: (id) => req(id, 1, { version: 'HTTP/1.0' }) + req(id, 2, { version: 'HTTP/1.0' }),
    methods: ['GET'],
  },
  {
    name: 'Expect + Connection: close, then a second request',
    kinds: ['fallback'],
    bytes: (id) =>
      req(id, 1, {
        method: 'POST',
        extra: 'Expect: 100-continue\r\nConnection: close\r\nContent-Length: 2\r\n',
        body: 'hi',
      }) + req(id, 2),
    methods: ['POST'],
  },
  {
    name: 'Expect + Connection: close for another host, then a second request',
    kinds: ['fallback'],
    bytes: (id) =>
      req(id, 1, {
        method: 'POST',
        host: 'Host: nowhere.test\r\n',
        extra: 'Expect: 100-continue\r\nConnection: close\r\nContent-Length: 2\r\n',
        body: 'hi',
      }) + req(id, 2),
    methods: ['POST'],
  },
  {
    name: 'HTTP/1.0 CL.TE',
    kinds: ['fallback'],
    bytes: (id) =>
      req(id, 1, { method: 'POST', version: 'HTTP/1.0', extra: `${cl(chunkedSmuggle)}${te}`, body: chunkedSmuggle }),
    methods: POST,
  },
  {
    name: 'HTTP/1.0 forged forwarding headers',
    kinds: ['fallback'],
    bytes: (id) =>
      req(id, 1, {
        version: 'HTTP/1.0',
        extra: 'X-Forwarded-For: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\nX-Real-IP: 6.6.6.6\r\n',
      }),
    methods: ['GET'],
  },
  {
    name: 'HTTP/1.0 Host with a path',
    kinds: ['fallback'],
    bytes: (id) => req(id, 1, { version: 'HTTP/1.0', host: 'Host: app.test/admin\r\n' }),
    methods: ['GET'],
  },
  {
    name: 'HTTP/1.0 bad chunk',
    kinds: ['fallback'],
    bytes: (id) =>
      req(id, 1, { method: 'POST', version: 'HTTP/1.0', extra: te, body: `zz\r\n${SMUGGLED}\r\n0\r\n\r\n` }),
    methods: POST,
  },
  // Local replies to HEAD carry no body: the next pipelined response must still parse.
  {
    name: 'HEAD refused by an unmet Expect (417), then a pipelined GET',
    kinds: H1,
    bytes: (id) => req(id, 1, { method: 'HEAD', extra: 'Expect: something-else\r\n' }) + req(id, 2),
    methods: ['HEAD', 'GET'],
  },
  {
    name: 'HEAD answered 502 by the proxy (malformed upstream head), then a pipelined GET',
    kinds: H1,
    bytes: (id) => req(id, 1, { method: 'HEAD', path: '/r/lf-only' }) + req(id, 2),
    methods: ['HEAD', 'GET'],
  },
  {
    name: 'HEAD with a bad Host (400, closes), then a pipelined GET',
    kinds: H1,
    bytes: (id) => req(id, 1, { method: 'HEAD', host: 'Host: bad host!\r\n' }) + req(id, 2),
    methods: ['HEAD', 'GET'],
  },
  {
    name: 'HEAD with a malformed header line (400, closes), then a pipelined GET',
    kinds: H1,
    bytes: (id) => req(id, 1, { method: 'HEAD', extra: 'x-bad : 1\r\n' }) + req(id, 2),
    methods: ['HEAD', 'GET'],
  },
  {
    name: 'HTTP/1.0 HEAD answered 502 by the proxy, then a pipelined GET (keep-alive)',
    kinds: ['fallback'],
    bytes: (id) =>
      req(id, 1, { method: 'HEAD', path: '/r/lf-only', version: 'HTTP/1.0', extra: 'Connection: keep-alive\r\n' }) +
      req(id, 2, { version: 'HTTP/1.0', extra: 'Connection: keep-alive\r\n' }),
    methods: ['HEAD', 'GET'],
  },
];
