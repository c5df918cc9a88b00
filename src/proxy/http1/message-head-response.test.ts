/**
 * The HTTP/1.1 response head parser: well-formed responses parse into status, fields and framing
 * flags, a head split at every byte boundary waits until complete, and malformed or ambiguous
 * responses (smuggling shapes, bad status lines, bare LF) are refused with 400.
 */
import { describe, expect, it } from 'vitest';
import { isHeadError, parseResponseHead, type ResponseHead } from './message-head.js';
import { BAD, b, MAX_BYTES, MAX_COUNT, okRes, res, TOO_LARGE, TOO_MANY } from './message-head-test-helpers.js';

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
