/**
 * The HTTP/1.1 request head parser on heads it accepts: well-formed requests parse into the fields
 * and framing flags the proxy relies on, and the same head split at every byte boundary waits
 * (undefined) until complete and then gives the same result.
 */
import { describe, expect, it } from 'vitest';
import { isHeadError, parseRequestHead, type RequestHead } from './message-head.js';
import { b, MAX_BYTES, MAX_COUNT, okReq, req, request, TOO_LARGE } from './message-head-test-helpers.js';

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
