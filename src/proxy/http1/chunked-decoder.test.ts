/**
 * `ChunkedDecoder`: chunk data out, framing and extensions dropped, the trailer section as a
 * name/value list — the same whatever the read boundaries (every split of the input).
 */
import { describe, expect, test } from 'vitest';
import { ChunkedDecoder } from './chunked-decoder.js';

function decodeIn(parts: Buffer[]): { body: string; trailers: readonly string[]; done: boolean } {
  const d = new ChunkedDecoder();
  let body = '';
  for (const p of parts) d.decode(p, (piece) => (body += piece.toString('latin1')));
  return { body, trailers: d.trailers, done: d.done };
}

const cases = [
  { name: 'one chunk', wire: '5\r\nhello\r\n0\r\n\r\n', body: 'hello', trailers: [] as string[] },
  {
    name: 'hex sizes and extensions',
    wire: 'A;ext=1\r\n0123456789\r\n1\r\nx\r\n0\r\n\r\n',
    body: '0123456789x',
    trailers: [],
  },
  {
    name: 'a trailer section',
    wire: '3\r\nabc\r\n0\r\nX-Checksum: c0ffee\r\nX-Other:  two \r\n\r\n',
    body: 'abc',
    trailers: ['X-Checksum', 'c0ffee', 'X-Other', 'two'],
  },
  { name: 'empty body', wire: '0\r\n\r\n', body: '', trailers: [] },
];

describe('ChunkedDecoder', () => {
  for (const c of cases) {
    test(`${c.name}: the same for every split of the input`, () => {
      const wire = Buffer.from(c.wire, 'latin1');
      expect(decodeIn([wire])).toEqual({ body: c.body, trailers: c.trailers, done: true });
      for (let i = 1; i < wire.length; i++) {
        expect(decodeIn([wire.subarray(0, i), wire.subarray(i)])).toEqual({
          body: c.body,
          trailers: c.trailers,
          done: true,
        });
      }
      const bytes = [...wire].map((b) => Buffer.from([b]));
      expect(decodeIn(bytes)).toEqual({ body: c.body, trailers: c.trailers, done: true });
    });
  }

  test('stops at the end of the message (bytes after it are not body)', () => {
    expect(decodeIn([Buffer.from('2\r\nok\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n')])).toEqual({
      body: 'ok',
      trailers: [],
      done: true,
    });
  });
});
