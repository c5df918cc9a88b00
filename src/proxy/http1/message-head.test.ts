/**
 * The HTTP/1.1 head parser against RFC 9112's strict rules: well-formed requests and responses
 * parse into the fields and framing flags the proxy relies on, the same head split at every byte
 * boundary waits (undefined) until complete and then gives the same result, and every shape a
 * request-smuggling attack relies on (CL+TE, duplicate framing fields, odd Transfer-Encoding,
 * obsolete line folding, bare CR/LF, control characters, whitespace before the colon) is refused
 * with 400, an oversized head with 431.
 */
import { describe, expect, it } from 'vitest';
import {
  type HeadError,
  isHeadError,
  parseRequestHead,
  parseResponseHead,
  type RequestHead,
  type ResponseHead,
} from './message-head.js';

const MAX_BYTES = 16 * 1024;
const MAX_COUNT = 100;

function b(s: string): Buffer {
  return Buffer.from(s, 'latin1');
}

function req(s: string, maxBytes = MAX_BYTES, maxCount = MAX_COUNT): RequestHead | HeadError | undefined {
  return parseRequestHead(b(s), 0, maxBytes, maxCount);
}

function res(s: string, maxBytes = MAX_BYTES, maxCount = MAX_COUNT): ResponseHead | HeadError | undefined {
  return parseResponseHead(b(s), 0, maxBytes, maxCount);
}

/** Parses a request that must succeed. */
function okReq(s: string, maxBytes = MAX_BYTES, maxCount = MAX_COUNT): RequestHead {
  const r = req(s, maxBytes, maxCount);
  if (r === undefined || isHeadError(r)) throw new Error(`expected a request head, got ${JSON.stringify(r)}`);
  return r;
}

/** Parses a response that must succeed. */
function okRes(s: string, maxBytes = MAX_BYTES, maxCount = MAX_COUNT): ResponseHead {
  const r = res(s, maxBytes, maxCount);
  if (r === undefined || isHeadError(r)) throw new Error(`expected a response head, got ${JSON.stringify(r)}`);
  return r;
}

const BAD = { error: 400, reason: 'bad-request' };
const TOO_LARGE = { error: 431, reason: 'header-too-large' };
const TOO_MANY = { error: 431, reason: 'too-many-headers' };

/** A request whose head is `line` plus `fields`, each field line given without its CRLF. */
function request(line: string, ...fields: string[]): string {
  return `${line}\r\n${fields.map((f) => `${f}\r\n`).join('')}\r\n`;
}

describe('parseRequestHead: well-formed requests', () => {
  it('parses a simple GET', () => {
    const s = 'GET /index.html HTTP/1.1\r\nHost: example.com\r\n\r\n';
    const h = okReq(s);
    expect(h).toEqual({
      method: 'GET',
      target: '/index.html',
      minor: 1,
      headers: ['Host', 'example.com'],
      host: 'example.com',
      contentLength: -1,
      chunked: false,
      close: false,
      upgrade: undefined,
      expect: false,
      length: s.length,
    });
  });

  it('keeps an origin-form target with query as sent', () => {
    const h = okReq(request('GET /a/b%20c?x=1&y=%2F HTTP/1.1', 'Host: a'));
    expect(h.target).toBe('/a/b%20c?x=1&y=%2F');
  });

  it('accepts an absolute-form target', () => {
    const h = okReq(request('GET http://example.com:8080/p?q=1 HTTP/1.1', 'Host: example.com:8080'));
    expect(h.target).toBe('http://example.com:8080/p?q=1');
    expect(h.host).toBe('example.com:8080');
  });

  it('accepts authority-form (CONNECT) and asterisk-form (OPTIONS) targets', () => {
    expect(okReq(request('CONNECT example.com:443 HTTP/1.1', 'Host: example.com:443')).target).toBe('example.com:443');
    const o = okReq(request('OPTIONS * HTTP/1.1', 'Host: a'));
    expect(o.method).toBe('OPTIONS');
    expect(o.target).toBe('*');
  });

  it('accepts any token as method, case-sensitively', () => {
    expect(okReq(request('PROPFIND / HTTP/1.1', 'Host: a')).method).toBe('PROPFIND');
    expect(okReq(request('get / HTTP/1.1', 'Host: a')).method).toBe('get');
    expect(okReq(request("M-1!#$%&'*+.^_`|~ / HTTP/1.1", 'Host: a')).method).toBe("M-1!#$%&'*+.^_`|~");
  });

  it('HTTP/1.0 closes by default and needs no Host', () => {
    const h = okReq('GET / HTTP/1.0\r\n\r\n');
    expect(h.minor).toBe(0);
    expect(h.close).toBe(true);
    expect(h.host).toBeUndefined();
    expect(h.headers).toEqual([]);
    expect(h.length).toBe('GET / HTTP/1.0\r\n\r\n'.length);
  });

  it('HTTP/1.0 with Connection: keep-alive stays open (token matched case-insensitively)', () => {
    expect(okReq(request('GET / HTTP/1.0', 'Connection: keep-alive')).close).toBe(false);
    expect(okReq(request('GET / HTTP/1.0', 'connection: Keep-Alive')).close).toBe(false);
    expect(okReq(request('GET / HTTP/1.0', 'Connection: keep-alive, close')).close).toBe(true);
  });

  it('HTTP/1.1 stays open by default and closes on Connection: close', () => {
    expect(okReq(request('GET / HTTP/1.1', 'Host: a')).close).toBe(false);
    expect(okReq(request('GET / HTTP/1.1', 'Host: a', 'Connection: close')).close).toBe(true);
    expect(okReq(request('GET / HTTP/1.1', 'Host: a', 'CONNECTION: Close')).close).toBe(true);
    expect(okReq(request('GET / HTTP/1.1', 'Host: a', 'Connection: upgrade, close')).close).toBe(true);
    expect(okReq(request('GET / HTTP/1.1', 'Host: a', 'Connection: keep-alive')).close).toBe(false);
    expect(okReq(request('GET / HTTP/1.1', 'Host: a', 'Connection: closed')).close).toBe(false);
  });

  it('ignores empty lines before the request line and counts them in length', () => {
    const s = '\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n';
    const h = okReq(s);
    expect(h.method).toBe('GET');
    expect(h.length).toBe(s.length);
    const one = `\r\n${request('POST /x HTTP/1.1', 'Host: a', 'Content-Length: 0')}`;
    expect(okReq(one).length).toBe(one.length);
  });

  it('length is the bytes consumed including the blank line; pipelined bytes after it are left', () => {
    const first = request('POST /a HTTP/1.1', 'Host: a', 'Content-Length: 5');
    const rest = `hello${request('GET /b HTTP/1.1', 'Host: a')}`;
    const buf = b(first + rest);
    const h = parseRequestHead(buf, 0, MAX_BYTES, MAX_COUNT) as RequestHead;
    expect(isHeadError(h)).toBe(false);
    expect(h.length).toBe(first.length);
    expect(h.contentLength).toBe(5);
    expect(buf.toString('latin1', h.length, h.length + 5)).toBe('hello');
    // The next request parses from where the body ends.
    const next = parseRequestHead(buf, h.length + 5, MAX_BYTES, MAX_COUNT) as RequestHead;
    expect(isHeadError(next)).toBe(false);
    expect(next.target).toBe('/b');
    expect(next.length).toBe(rest.length - 5);
    expect(h.length + 5 + next.length).toBe(buf.length);
  });

  it('parses at a non-zero start; length is relative to start', () => {
    const prefix = 'garbage that is not looked at';
    const s = request('GET /z HTTP/1.1', 'Host: a');
    const h = parseRequestHead(b(prefix + s), prefix.length, MAX_BYTES, MAX_COUNT) as RequestHead;
    expect(h.target).toBe('/z');
    expect(h.length).toBe(s.length);
  });

  it('trims SP and HTAB around values but keeps inner whitespace', () => {
    const h = okReq(request('GET / HTTP/1.1', 'Host:a', 'X-A:  \t v a l \t ', 'X-B:\t\t', 'X-C:   '));
    expect(h.headers).toEqual(['Host', 'a', 'X-A', 'v a l', 'X-B', '', 'X-C', '']);
    expect(okReq(request('GET / HTTP/1.1', 'Host: \t example.com \t')).host).toBe('example.com');
  });

  it('keeps header order, name case and duplicates of ordinary fields', () => {
    const h = okReq(
      request('GET / HTTP/1.1', 'x-lower: 1', 'HOST: a', 'X-Upper: 2', 'Set-Thing: a', 'set-thing: b', 'X-Upper: 3'),
    );
    expect(h.headers).toEqual([
      'x-lower',
      '1',
      'HOST',
      'a',
      'X-Upper',
      '2',
      'Set-Thing',
      'a',
      'set-thing',
      'b',
      'X-Upper',
      '3',
    ]);
    expect(h.host).toBe('a');
  });

  it('passes obs-text bytes and colons in values through unchanged', () => {
    const h = okReq(request('GET / HTTP/1.1', 'Host: a', 'X-Latin: caf\xe9 \xff', 'X-Url: http://x:1/y'));
    expect(h.headers[3]).toBe('caf\xe9 \xff');
    expect(h.headers[5]).toBe('http://x:1/y');
  });

  it('accepts an empty Host value (RFC 9112 §3.2)', () => {
    expect(okReq(request('GET / HTTP/1.1', 'Host:')).host).toBe('');
  });

  it('accepts exactly one Content-Length made of digits', () => {
    expect(okReq(request('POST / HTTP/1.1', 'Host: a', 'Content-Length: 0')).contentLength).toBe(0);
    expect(okReq(request('POST / HTTP/1.1', 'Host: a', 'content-length:   123456789  ')).contentLength).toBe(123456789);
    expect(okReq(request('POST / HTTP/1.1', 'Host: a', 'Content-Length: 007')).contentLength).toBe(7);
    expect(okReq(request('POST / HTTP/1.1', 'Host: a', 'Content-Length: 999999999999999')).contentLength).toBe(
      999999999999999,
    );
  });

  it('accepts Transfer-Encoding: chunked (case-insensitive, surrounding whitespace trimmed)', () => {
    for (const v of ['chunked', 'Chunked', 'CHUNKED', ' chunked', '\tchunked \t']) {
      const h = okReq(`POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:${v}\r\n\r\n`);
      expect(h.chunked, v).toBe(true);
      expect(h.contentLength, v).toBe(-1);
    }
  });

  it('sets the upgrade and expect flags from their fields', () => {
    const plain = okReq(request('GET / HTTP/1.1', 'Host: a'));
    expect(plain.upgrade).toBeUndefined();
    expect(plain.expect).toBe(false);
    expect(plain.chunked).toBe(false);
    expect(plain.contentLength).toBe(-1);
    const up = okReq(request('GET /ws HTTP/1.1', 'Host: a', 'Connection: Upgrade', 'Upgrade: websocket'));
    expect(up.upgrade).toBe('websocket');
    expect(up.expect).toBe(false);
    expect(up.close).toBe(false);
    // A lone Upgrade field (no `Connection: upgrade`) asks for nothing.
    expect(okReq(request('GET / HTTP/1.1', 'Host: a', 'upgrade: h2c')).upgrade).toBeUndefined();
    const ex = okReq(request('PUT / HTTP/1.1', 'Host: a', 'Expect: 100-continue', 'Content-Length: 10'));
    expect(ex.expect).toBe(true);
    expect(ex.upgrade).toBeUndefined();
    expect(ex.contentLength).toBe(10);
    expect(okReq(request('PUT / HTTP/1.1', 'Host: a', 'EXPECT: 100-continue')).expect).toBe(true);
  });

  it('does not mistake longer or shorter names for framing fields', () => {
    const h = okReq(
      request(
        'GET / HTTP/1.1',
        'Host: a',
        'X-Content-Length: 1',
        'Content-Lengths: x',
        'Transfer-Encodings: gzip',
        'Hosts: b',
      ),
    );
    expect(h.contentLength).toBe(-1);
    expect(h.chunked).toBe(false);
    expect(h.host).toBe('a');
  });
});

describe('parseRequestHead: incomplete heads', () => {
  it('returns undefined for an empty buffer and for partial heads', () => {
    expect(req('')).toBeUndefined();
    expect(req('\r\n')).toBeUndefined();
    expect(req('GET / HTTP/1.1')).toBeUndefined();
    expect(req('GET / HTTP/1.1\r\nHost: a\r\n')).toBeUndefined();
    expect(req('GET / HTTP/1.1\r\nHost: a\r\n\r')).toBeUndefined();
  });

  it('a head split at every byte boundary is undefined until complete, then the same head', () => {
    const heads = [
      request('GET /a?b=c HTTP/1.1', 'Host: example.com', 'User-Agent: t/1', 'Accept: */*'),
      `\r\n${request('POST /p HTTP/1.1', 'Host: a', 'Content-Length: 3', 'Connection: close')}`,
      request('GET / HTTP/1.0'),
      request('PUT /c HTTP/1.1', 'host: a', 'transfer-encoding: chunked', 'expect: 100-continue'),
    ];
    for (const head of heads) {
      const full = b(`${head}abcGET / HTTP/1.1\r\n`);
      const whole = parseRequestHead(full, 0, MAX_BYTES, MAX_COUNT) as RequestHead;
      expect(isHeadError(whole)).toBe(false);
      expect(whole.length).toBe(head.length);
      for (let n = 0; n < head.length; n++) {
        expect(parseRequestHead(full.subarray(0, n), 0, MAX_BYTES, MAX_COUNT), `prefix ${n}`).toBeUndefined();
      }
      for (let n = head.length; n <= full.length; n++) {
        expect(parseRequestHead(full.subarray(0, n), 0, MAX_BYTES, MAX_COUNT), `prefix ${n}`).toEqual(whole);
      }
    }
  });

  it('a head exactly at the size limit is undefined at every prefix and accepted when complete', () => {
    // The limit counts the head up to its blank line, so this head is accepted in one piece; it
    // must not be refused when the connection delivers it in two parts near its end.
    const head = request('GET / HTTP/1.1', 'Host: a', `X-Pad: ${'p'.repeat(50)}`);
    const limit = head.length - 4;
    expect(isHeadError(okReq(head, limit))).toBe(false);
    expect(req(head, limit - 1)).toEqual(TOO_LARGE);
    const full = b(head);
    const got: Array<{ n: number; r: unknown }> = [];
    for (let n = 0; n < head.length; n++) {
      const r = parseRequestHead(full.subarray(0, n), 0, limit, MAX_COUNT);
      if (r !== undefined) got.push({ n, r });
    }
    expect(got).toEqual([]);
  });
});

describe('parseRequestHead: smuggling and malformed heads → 400', () => {
  const bad: Array<[string, string]> = [
    [
      'Content-Length and Transfer-Encoding',
      request('POST / HTTP/1.1', 'Host: a', 'Content-Length: 5', 'Transfer-Encoding: chunked'),
    ],
    [
      'Transfer-Encoding then Content-Length',
      request('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding: chunked', 'Content-Length: 5'),
    ],
    ['two different Content-Length', request('POST / HTTP/1.1', 'Host: a', 'Content-Length: 5', 'Content-Length: 6')],
    ['two equal Content-Length', request('POST / HTTP/1.1', 'Host: a', 'Content-Length: 5', 'content-length: 5')],
    [
      'two Transfer-Encoding',
      request('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding: chunked', 'Transfer-Encoding: chunked'),
    ],
    ['Transfer-Encoding: chunked, gzip', request('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding: chunked, gzip')],
    ['Transfer-Encoding: gzip, chunked', request('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding: gzip, chunked')],
    ['Transfer-Encoding: gzip', request('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding: gzip')],
    ['Transfer-Encoding: xchunked', request('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding: xchunked')],
    ['Transfer-Encoding: chunkedx', request('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding: chunkedx')],
    ['Transfer-Encoding: chunked;', request('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding: chunked;')],
    ['Transfer-Encoding: identity', request('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding: identity')],
    ['empty Transfer-Encoding', request('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding:')],
    ['Transfer-Encoding with inner space', request('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding: chun ked')],
    ['Content-Length +5', request('POST / HTTP/1.1', 'Host: a', 'Content-Length: +5')],
    ['Content-Length -1', request('POST / HTTP/1.1', 'Host: a', 'Content-Length: -1')],
    ['Content-Length with inner space', request('POST / HTTP/1.1', 'Host: a', 'Content-Length: 1 2')],
    ['Content-Length hex', request('POST / HTTP/1.1', 'Host: a', 'Content-Length: 0x10')],
    ['Content-Length a', request('POST / HTTP/1.1', 'Host: a', 'Content-Length: a')],
    ['Content-Length 1,1', request('POST / HTTP/1.1', 'Host: a', 'Content-Length: 1,1')],
    ['Content-Length 1, 1', request('POST / HTTP/1.1', 'Host: a', 'Content-Length: 1, 1')],
    ['Content-Length 1.0', request('POST / HTTP/1.1', 'Host: a', 'Content-Length: 1.0')],
    ['Content-Length 1e3', request('POST / HTTP/1.1', 'Host: a', 'Content-Length: 1e3')],
    ['empty Content-Length', request('POST / HTTP/1.1', 'Host: a', 'Content-Length:')],
    ['blank Content-Length', request('POST / HTTP/1.1', 'Host: a', 'Content-Length:   ')],
    ['Content-Length of 16 digits', request('POST / HTTP/1.1', 'Host: a', `Content-Length: ${'1'.repeat(16)}`)],
    ['space before colon', request('GET / HTTP/1.1', 'Host : a')],
    ['tab before colon', request('GET / HTTP/1.1', 'Host: a', 'X-A\t: b')],
    ['space before colon on Content-Length', request('POST / HTTP/1.1', 'Host: a', 'Content-Length : 5')],
    ['space before colon on Transfer-Encoding', request('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding : chunked')],
    ['obs-fold continuation with SP', request('GET / HTTP/1.1', 'Host: a', 'X-A: b', ' c')],
    ['obs-fold continuation with HTAB', request('GET / HTTP/1.1', 'Host: a', 'X-A: b', '\tc')],
    ['obs-fold line with a colon', request('GET / HTTP/1.1', 'Host: a', ' Transfer-Encoding: chunked')],
    ['leading whitespace on the first field', request('GET / HTTP/1.1', ' Host: a')],
    ['field line without colon', request('GET / HTTP/1.1', 'Host: a', 'NoColonHere')],
    ['empty field name', request('GET / HTTP/1.1', 'Host: a', ': v')],
    ['non-token field name', request('GET / HTTP/1.1', 'Host: a', 'X(A): v')],
    ['field name with obs-text', request('GET / HTTP/1.1', 'Host: a', 'X-\xe9: v')],
    ['bare CR inside a value', request('GET / HTTP/1.1', 'Host: a', 'X-A: b\rc')],
    ['bare CR at the end of a value', request('GET / HTTP/1.1', 'Host: a', 'X-A: b\r')],
    ['bare LF inside a value', request('GET / HTTP/1.1', 'Host: a', 'X-A: b\nc')],
    ['bare LF ending a field line', 'GET / HTTP/1.1\r\nHost: a\nX-A: b\r\n\r\n'],
    ['bare LF ending the request line', 'GET / HTTP/1.1\nHost: a\r\n\r\n'],
    ['bare CR ending the request line', 'GET / HTTP/1.1\rHost: a\r\n\r\n'],
    ['NUL in a value', request('GET / HTTP/1.1', 'Host: a', 'X-A: b\x00c')],
    ['NUL in Host', request('GET / HTTP/1.1', 'Host: a\x00.evil')],
    ['ESC in a value', request('GET / HTTP/1.1', 'Host: a', 'X-A: \x1b[31m')],
    ['VT in a value', request('GET / HTTP/1.1', 'Host: a', 'X-A: b\x0bc')],
    ['DEL in a value', request('GET / HTTP/1.1', 'Host: a', 'X-A: b\x7fc')],
    ['missing Host on HTTP/1.1', request('GET / HTTP/1.1', 'X-A: b')],
    ['no fields at all on HTTP/1.1', request('GET / HTTP/1.1')],
    ['two Host', request('GET / HTTP/1.1', 'Host: a', 'Host: b')],
    ['two equal Host', request('GET / HTTP/1.1', 'Host: a', 'host: a')],
    ['two Host on HTTP/1.0', request('GET / HTTP/1.0', 'Host: a', 'Host: b')],
    ['bad method character', request('G@T / HTTP/1.1', 'Host: a')],
    ['method with a slash', request('GE/T / HTTP/1.1', 'Host: a')],
    ['method with obs-text', request('G\xc9T / HTTP/1.1', 'Host: a')],
    ['empty method', request(' / HTTP/1.1', 'Host: a')],
    ['empty target (two spaces)', request('GET  HTTP/1.1', 'Host: a')],
    ['target with NUL', request('GET /\x00 HTTP/1.1', 'Host: a')],
    ['target with HTAB', request('GET /a\tb HTTP/1.1', 'Host: a')],
    ['target with DEL', request('GET /\x7f HTTP/1.1', 'Host: a')],
    ['target with obs-text', request('GET /caf\xe9 HTTP/1.1', 'Host: a')],
    ['target with a space', request('GET /a b HTTP/1.1', 'Host: a')],
    ['HTTP/2.0', request('GET / HTTP/2.0', 'Host: a')],
    ['HTTP/1.2', request('GET / HTTP/1.2', 'Host: a')],
    ['HTTP/0.9', request('GET / HTTP/0.9', 'Host: a')],
    ['HTTP/1.10', request('GET / HTTP/1.10', 'Host: a')],
    ['lowercase version', request('GET / http/1.1', 'Host: a')],
    ['version HTTP/1', request('GET / HTTP/1', 'Host: a')],
    ['missing version', request('GET /', 'Host: a')],
    ['missing spaces in request line', request('GET/HTTP/1.1', 'Host: a')],
    ['missing space before version', request('GET /HTTP/1.1', 'Host: a')],
    ['missing space after method', request('GET/ HTTP/1.1', 'Host: a')],
    ['trailing space after version', request('GET / HTTP/1.1 ', 'Host: a')],
    ['leading space before the request line', request(' GET / HTTP/1.1', 'Host: a')],
    ['HTAB as request line separator', request('GET\t/\tHTTP/1.1', 'Host: a')],
    ['two spaces before version', request('GET /  HTTP/1.1', 'Host: a')],
    ['five empty lines before the request line', `\r\n\r\n\r\n\r\n\r\n${request('GET / HTTP/1.1', 'Host: a')}`],
    ['empty head', '\r\n\r\n\r\n\r\n\r\n\r\n'],
  ];

  for (const [name, input] of bad) {
    it(`refuses ${name}`, () => {
      expect(req(input)).toEqual(BAD);
    });
  }

  it('refuses a head ended by bare LFs at once instead of waiting', () => {
    expect(req('GET / HTTP/1.1\nHost: a\n\n')).toEqual(BAD);
    expect(req('GET / HTTP/1.1\r\nHost: a\n\n')).toEqual(BAD);
    expect(req('GET / HTTP/1.0\n\n')).toEqual(BAD);
  });

  it('refuses smuggling shapes even when a valid request follows (pipelined)', () => {
    const evil = request('POST / HTTP/1.1', 'Host: a', 'Content-Length: 4', 'Transfer-Encoding: chunked');
    expect(req(`${evil}0\r\n\r\n${request('GET /admin HTTP/1.1', 'Host: a')}`)).toEqual(BAD);
  });
});

describe('parseRequestHead: limits → 431', () => {
  it('refuses a complete head longer than maxHeaderBytes', () => {
    const head = request('GET / HTTP/1.1', 'Host: a', `X-Big: ${'x'.repeat(200)}`);
    expect(req(head, 100)).toEqual(TOO_LARGE);
    expect(isHeadError(okReq(head, 1000))).toBe(false);
  });

  it('refuses an incomplete head that is already longer than maxHeaderBytes', () => {
    const partial = `GET / HTTP/1.1\r\nHost: a\r\nX-Big: ${'x'.repeat(200)}`;
    expect(req(partial, 100)).toEqual(TOO_LARGE);
    expect(req(partial, 1000)).toBeUndefined();
    // No line end at all, e.g. a endless request line.
    expect(req(`GET /${'a'.repeat(300)}`, 100)).toEqual(TOO_LARGE);
  });

  it('counts from start, not from the buffer start', () => {
    const head = request('GET / HTTP/1.1', 'Host: a', 'X-A: b');
    const pad = 'x'.repeat(500);
    const r = parseRequestHead(b(pad + head), pad.length, head.length, MAX_COUNT) as RequestHead;
    expect(isHeadError(r)).toBe(false);
    expect(r.length).toBe(head.length);
  });

  it('accepts exactly maxHeaderCount fields and refuses one more with too-many-headers', () => {
    const fields = ['Host: a'];
    for (let i = 1; i < 10; i++) fields.push(`X-${i}: ${i}`);
    const ten = okReq(request('GET / HTTP/1.1', ...fields), MAX_BYTES, 10);
    expect(ten.headers.length).toBe(20);
    expect(req(request('GET / HTTP/1.1', ...fields, 'X-10: 10'), MAX_BYTES, 10)).toEqual(TOO_MANY);
    expect(req(request('GET / HTTP/1.1', ...fields, 'X-10: 10', 'X-11: 11'), MAX_BYTES, 10)).toEqual(TOO_MANY);
  });

  it('too-many-headers is a 431 even with maxHeaderCount 0', () => {
    expect(isHeadError(okReq(request('GET / HTTP/1.0'), MAX_BYTES, 0))).toBe(false);
    expect(req(request('GET / HTTP/1.0', 'X: y'), MAX_BYTES, 0)).toEqual(TOO_MANY);
  });
});

describe('isHeadError', () => {
  it('tells errors from heads', () => {
    const e = req(request('GET / HTTP/1.1'));
    expect(e).toBeDefined();
    expect(isHeadError(e as object)).toBe(true);
    expect(isHeadError(okReq(request('GET / HTTP/1.1', 'Host: a')))).toBe(false);
    expect(isHeadError(okRes('HTTP/1.1 200 OK\r\n\r\n'))).toBe(false);
    expect(isHeadError(res('HTTP/1.1 abc\r\n\r\n') as object)).toBe(true);
  });
});

describe('parseResponseHead: well-formed responses', () => {
  it('parses HTTP/1.1 200 OK', () => {
    const s = 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n\r\n';
    expect(okRes(s)).toEqual({
      status: 200,
      statusText: 'OK',
      headers: ['Content-Type', 'text/plain', 'Content-Length', '12'],
      contentLength: 12,
      chunked: false,
      transferEncoding: undefined,
      close: false,
      keepAliveMs: undefined,
      length: s.length,
    });
  });

  it('accepts a status line without reason phrase, with or without the space', () => {
    const a = okRes('HTTP/1.1 204\r\n\r\n');
    expect(a.status).toBe(204);
    expect(a.statusText).toBe('');
    expect(a.length).toBe('HTTP/1.1 204\r\n\r\n'.length);
    const c = okRes('HTTP/1.1 204 \r\n\r\n');
    expect(c.status).toBe(204);
    expect(c.statusText).toBe('');
  });

  it('keeps the reason phrase as sent, spaces, tabs and obs-text included', () => {
    expect(okRes('HTTP/1.1 404 Not  Found\t!\r\n\r\n').statusText).toBe('Not  Found\t!');
    expect(okRes('HTTP/1.1 200 d\xe9j\xe0 vu\r\n\r\n').statusText).toBe('d\xe9j\xe0 vu');
  });

  it('parses 1xx, 3xx, 5xx and non-standard status codes', () => {
    expect(okRes('HTTP/1.1 100 Continue\r\n\r\n').status).toBe(100);
    expect(okRes('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n').status).toBe(
      101,
    );
    expect(okRes('HTTP/1.1 302 Found\r\nLocation: /x\r\n\r\n').status).toBe(302);
    expect(okRes('HTTP/1.1 503 Service Unavailable\r\n\r\n').status).toBe(503);
    expect(okRes('HTTP/1.1 999 Whatever\r\n\r\n').status).toBe(999);
  });

  it('HTTP/1.0 closes by default unless keep-alive', () => {
    const h = okRes('HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n');
    expect(h.close).toBe(true);
    expect(okRes('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n').close).toBe(false);
    expect(okRes('HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nKeep-Alive: timeout=3\r\n\r\n').keepAliveMs).toBe(3000);
  });

  it('HTTP/1.1 closes on Connection: close only', () => {
    expect(okRes('HTTP/1.1 200 OK\r\n\r\n').close).toBe(false);
    expect(okRes('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n').close).toBe(true);
    expect(okRes('HTTP/1.1 200 OK\r\nconnection: keep-alive, Close\r\n\r\n').close).toBe(true);
    expect(okRes('HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\n').close).toBe(false);
  });

  it('parses Keep-Alive: timeout=N into keepAliveMs', () => {
    expect(okRes('HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\n\r\n').keepAliveMs).toBe(5000);
    expect(okRes('HTTP/1.1 200 OK\r\nkeep-alive: timeout=5, max=100\r\n\r\n').keepAliveMs).toBe(5000);
    expect(okRes('HTTP/1.1 200 OK\r\nKeep-Alive: max=100, timeout=30\r\n\r\n').keepAliveMs).toBe(30000);
    expect(okRes('HTTP/1.1 200 OK\r\nKeep-Alive: TIMEOUT = 2\r\n\r\n').keepAliveMs).toBe(2000);
    expect(okRes('HTTP/1.1 200 OK\r\nKeep-Alive: max=100\r\n\r\n').keepAliveMs).toBeUndefined();
    expect(okRes('HTTP/1.1 200 OK\r\nKeep-Alive: xtimeout=9\r\n\r\n').keepAliveMs).toBeUndefined();
    expect(okRes('HTTP/1.1 200 OK\r\n\r\n').keepAliveMs).toBeUndefined();
  });

  it('parses Content-Length; equal duplicates are accepted', () => {
    expect(okRes('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n').contentLength).toBe(0);
    expect(okRes('HTTP/1.1 200 OK\r\nContent-Length:  42 \r\n\r\n').contentLength).toBe(42);
    expect(okRes('HTTP/1.1 200 OK\r\n\r\n').contentLength).toBe(-1);
    const dup = okRes('HTTP/1.1 200 OK\r\nContent-Length: 7\r\ncontent-length: 7\r\n\r\n');
    expect(dup.contentLength).toBe(7);
    expect(dup.headers).toEqual(['Content-Length', '7', 'content-length', '7']);
  });

  it('chunked when the last transfer coding is chunked; the value is kept as sent', () => {
    const c = okRes('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
    expect(c.chunked).toBe(true);
    expect(c.transferEncoding).toBe('chunked');
    expect(c.contentLength).toBe(-1);
    const gz = okRes('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n');
    expect(gz.chunked).toBe(true);
    expect(gz.transferEncoding).toBe('gzip, chunked');
    expect(okRes('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip,Chunked \r\n\r\n').chunked).toBe(true);
    const two = okRes('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n');
    expect(two.chunked).toBe(true);
    expect(two.transferEncoding).toBe('gzip, chunked');
  });

  it('not chunked when chunked is not the last coding (read until close)', () => {
    const g = okRes('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n');
    expect(g.chunked).toBe(false);
    expect(g.transferEncoding).toBe('gzip');
    expect(g.contentLength).toBe(-1);
    expect(okRes('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n').chunked).toBe(false);
    expect(okRes('HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunked\r\n\r\n').chunked).toBe(false);
    expect(okRes('HTTP/1.1 200 OK\r\nTransfer-Encoding: GZIP ,  Chunked\r\n\r\n').transferEncoding).toBe(
      'gzip, chunked',
    );
  });

  it('refuses chunked applied twice and codings that are not tokens', () => {
    for (const te of ['chunked, chunked', 'chunked\r\nTransfer-Encoding: chunked', 'gzip;q=1, chunked', '"chunked"']) {
      const r = parseResponseHead(b(`HTTP/1.1 200 OK\r\nTransfer-Encoding: ${te}\r\n\r\n`), 0, MAX_BYTES, MAX_COUNT);
      expect(r !== undefined && isHeadError(r)).toBe(true);
    }
  });

  it('length with pipelined bytes after the head, and at a non-zero start', () => {
    const head = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n';
    const buf = b(`junk${head}hiHTTP/1.1 204 No Content\r\n\r\n`);
    const h = parseResponseHead(buf, 4, MAX_BYTES, MAX_COUNT) as ResponseHead;
    expect(h.length).toBe(head.length);
    const next = parseResponseHead(buf, 4 + head.length + 2, MAX_BYTES, MAX_COUNT) as ResponseHead;
    expect(next.status).toBe(204);
    expect(4 + head.length + 2 + next.length).toBe(buf.length);
  });

  it('a head split at every byte boundary is undefined until complete, then the same head', () => {
    const head = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nKeep-Alive: timeout=5\r\nX-A:  b \r\n\r\n';
    const full = b(`${head}5\r\nhello\r\n0\r\n\r\n`);
    const whole = parseResponseHead(full, 0, MAX_BYTES, MAX_COUNT) as ResponseHead;
    expect(whole.length).toBe(head.length);
    for (let n = 0; n < head.length; n++) {
      expect(parseResponseHead(full.subarray(0, n), 0, MAX_BYTES, MAX_COUNT), `prefix ${n}`).toBeUndefined();
    }
    for (let n = head.length; n <= full.length; n++) {
      expect(parseResponseHead(full.subarray(0, n), 0, MAX_BYTES, MAX_COUNT), `prefix ${n}`).toEqual(whole);
    }
  });
});

describe('parseResponseHead: refused heads', () => {
  const bad: Array<[string, string]> = [
    ['lowercase protocol', 'http/1.1 200 OK\r\n\r\n'],
    ['HTTP/2', 'HTTP/2 200 OK\r\n\r\n'],
    ['HTTP/2.0', 'HTTP/2.0 200 OK\r\n\r\n'],
    ['HTTP/1.2', 'HTTP/1.2 200 OK\r\n\r\n'],
    ['HTTP/1.x', 'HTTP/1.x 200 OK\r\n\r\n'],
    ['HTTP/1.10', 'HTTP/1.10 200 OK\r\n\r\n'],
    ['missing status', 'HTTP/1.1\r\n\r\n'],
    ['missing status after space', 'HTTP/1.1 \r\n\r\n'],
    ['two-digit status', 'HTTP/1.1 20 OK\r\n\r\n'],
    ['two-digit status at line end', 'HTTP/1.1 20\r\n\r\n'],
    ['four-digit status', 'HTTP/1.1 2000 OK\r\n\r\n'],
    ['status 099', 'HTTP/1.1 099 X\r\n\r\n'],
    ['status 000', 'HTTP/1.1 000 X\r\n\r\n'],
    ['non-digit status', 'HTTP/1.1 abc OK\r\n\r\n'],
    ['status with a space inside', 'HTTP/1.1 2 0 OK\r\n\r\n'],
    ['status with leading space', 'HTTP/1.1  200 OK\r\n\r\n'],
    ['status +20', 'HTTP/1.1 +20 OK\r\n\r\n'],
    ['status in exponent form', 'HTTP/1.1 2e2 OK\r\n\r\n'],
    ['status with a decimal point', 'HTTP/1.1 20. OK\r\n\r\n'],
    ['no space after status', 'HTTP/1.1 200OK\r\n\r\n'],
    ['HTAB after status', 'HTTP/1.1 200\tOK\r\n\r\n'],
    ['HTAB after version', 'HTTP/1.1\t200 OK\r\n\r\n'],
    ['NUL in reason', 'HTTP/1.1 200 O\x00K\r\n\r\n'],
    ['bare CR in reason', 'HTTP/1.1 200 O\rK\r\n\r\n'],
    ['bare LF in status line', 'HTTP/1.1 200 OK\nX-A: b\r\n\r\n'],
    ['different Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n'],
    ['Content-Length list', 'HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n'],
    ['Content-Length with sign', 'HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n'],
    ['Content-Length negative', 'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n'],
    ['Content-Length hex', 'HTTP/1.1 200 OK\r\nContent-Length: 0x5\r\n\r\n'],
    ['empty Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n'],
    [
      'Transfer-Encoding with Content-Length',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n',
    ],
    [
      'Content-Length with Transfer-Encoding',
      'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n',
    ],
    [
      'Content-Length with Transfer-Encoding gzip',
      'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: gzip\r\n\r\n',
    ],
    ['space before colon', 'HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\n'],
    ['obs-fold', 'HTTP/1.1 200 OK\r\nX-A: b\r\n c\r\n\r\n'],
    ['field without colon', 'HTTP/1.1 200 OK\r\nX-A\r\n\r\n'],
    ['NUL in a value', 'HTTP/1.1 200 OK\r\nX-A: \x00\r\n\r\n'],
    ['bare CR in a value', 'HTTP/1.1 200 OK\r\nX-A: b\rc\r\n\r\n'],
  ];

  for (const [name, input] of bad) {
    it(`refuses ${name}`, () => {
      expect(res(input)).toEqual(BAD);
    });
  }

  it('refuses a head ended by bare LFs at once', () => {
    expect(res('HTTP/1.1 200 OK\nContent-Length: 0\n\n')).toEqual(BAD);
  });

  it('refuses heads over the byte and field limits with 431', () => {
    const big = `HTTP/1.1 200 OK\r\nX-Big: ${'x'.repeat(300)}\r\n\r\n`;
    expect(res(big, 100)).toEqual(TOO_LARGE);
    expect(res(big.slice(0, 200), 100)).toEqual(TOO_LARGE);
    expect(isHeadError(okRes(big, 1000))).toBe(false);
    const three = 'HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n';
    expect(okRes(three, MAX_BYTES, 3).headers.length).toBe(6);
    expect(res(three, MAX_BYTES, 2)).toEqual(TOO_MANY);
  });

  it('incomplete heads are undefined', () => {
    expect(res('')).toBeUndefined();
    expect(res('HTTP/1.1 200 OK')).toBeUndefined();
    expect(res('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n')).toBeUndefined();
    expect(res('HTTP/1.1 200 OK\r\n\r')).toBeUndefined();
  });
});
