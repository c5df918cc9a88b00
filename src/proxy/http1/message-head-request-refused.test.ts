/**
 * The HTTP/1.1 request head parser on heads it refuses under RFC 9112's strict rules: every shape a
 * request-smuggling attack relies on (CL+TE, duplicate framing fields, odd Transfer-Encoding, obsolete
 * line folding, bare CR/LF, control characters, whitespace before the colon) is refused with 400, an
 * oversized head or too many fields with 431; and isHeadError tells the two results apart.
 */
import { describe, expect, it } from 'vitest';
import { isHeadError, parseRequestHead, type RequestHead } from './message-head.js';
import {
  BAD,
  b,
  MAX_BYTES,
  MAX_COUNT,
  okReq,
  okRes,
  req,
  request,
  res,
  TOO_LARGE,
  TOO_MANY,
} from './message-head-test-helpers.js';

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
