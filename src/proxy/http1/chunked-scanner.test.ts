/**
 * The chunked-body scanner finds where a chunked body ends (RFC 9112 §7.1) whether the body
 * comes in one buffer, one byte at a time or split at every boundary, never consumes the bytes
 * after it, and refuses every malformed shape (bad sizes, missing CRLFs, bare LFs, bad trailer
 * lines, oversized extensions or trailers) with -1, after which it stays failed.
 */
import { describe, expect, it } from 'vitest';
import { ChunkedScanner } from './chunked-scanner.js';

function b(s: string): Buffer {
  return Buffer.from(s, 'latin1');
}

/** Scans `body` in one call; returns the result and the scanner. */
function scanAll(body: string, maxTrailerBytes?: number): { end: number; scanner: ChunkedScanner } {
  const scanner = new ChunkedScanner(maxTrailerBytes);
  const buf = b(body);
  return { end: scanner.scan(buf, 0, buf.length), scanner };
}

/** Feeds `body` in pieces cut at `cuts`; returns the absolute end index, -1, or undefined while unfinished. */
function scanPieces(body: string, cuts: number[]): number | undefined {
  const scanner = new ChunkedScanner();
  const buf = b(body);
  const bounds = [0, ...cuts, buf.length];
  for (let k = 0; k + 1 < bounds.length; k++) {
    const from = bounds[k] as number;
    const to = bounds[k + 1] as number;
    const r = scanner.scan(buf, from, to);
    if (r === -1) return -1;
    if (scanner.done) return r;
    expect(r).toBe(to);
  }
  return undefined;
}

const BODY = '5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n';

describe('ChunkedScanner: well-formed bodies', () => {
  it('finds the end of a full body in one buffer', () => {
    const { end, scanner } = scanAll(BODY);
    expect(end).toBe(BODY.length);
    expect(scanner.done).toBe(true);
    expect(scanner.failed).toBe(false);
  });

  it('an empty body (only the last chunk)', () => {
    const { end, scanner } = scanAll('0\r\n\r\n');
    expect(end).toBe(5);
    expect(scanner.done).toBe(true);
  });

  it('the same body fed one byte at a time', () => {
    const scanner = new ChunkedScanner();
    const buf = b(BODY);
    for (let i = 0; i < buf.length; i++) {
      expect(scanner.done, `before byte ${i}`).toBe(false);
      const r = scanner.scan(buf, i, i + 1);
      expect(r, `byte ${i}`).toBe(i + 1);
      expect(scanner.failed).toBe(false);
    }
    expect(scanner.done).toBe(true);
  });

  it('the same body fed one byte at a time from separate one-byte buffers', () => {
    const scanner = new ChunkedScanner();
    const buf = b(BODY);
    for (let i = 0; i < buf.length; i++) {
      const one = buf.subarray(i, i + 1);
      expect(scanner.scan(one, 0, 1)).toBe(1);
      expect(scanner.done).toBe(i === buf.length - 1);
    }
  });

  it('split into two pieces at every boundary, with bytes after the end, always ends at the same index', () => {
    const body = '1a;name=val\r\n0123456789abcdefghijklmnop\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n';
    const tail = 'GET / HTTP/1.1\r\n';
    for (let cut = 0; cut <= body.length + tail.length; cut++) {
      expect(scanPieces(body + tail, [cut]), `cut ${cut}`).toBe(body.length);
    }
  });

  it('split into three pieces at every pair of boundaries', () => {
    for (let c1 = 0; c1 <= BODY.length; c1++) {
      for (let c2 = c1; c2 <= BODY.length; c2++) {
        expect(scanPieces(BODY, [c1, c2]), `cuts ${c1},${c2}`).toBe(BODY.length);
      }
    }
  });

  it('returns `to` and is not done while the body continues', () => {
    const scanner = new ChunkedScanner();
    const buf = b(BODY);
    expect(scanner.scan(buf, 0, 10)).toBe(10);
    expect(scanner.done).toBe(false);
    expect(scanner.failed).toBe(false);
    expect(scanner.scan(buf, 10, 10)).toBe(10);
    expect(scanner.scan(buf, 10, buf.length)).toBe(buf.length);
    expect(scanner.done).toBe(true);
  });

  it('chunk data split across many calls counts down the size', () => {
    const data = 'x'.repeat(1000);
    const body = `3e8\r\n${data}\r\n0\r\n\r\n`;
    expect(scanPieces(body, [7, 100, 500, 1004, 1005, 1006])).toBe(body.length);
    // Data containing CRLF and chunk-like text is skipped as data.
    const tricky = '7\r\n0\r\n\r\n\r\n\r\n0\r\n\r\n';
    expect(scanAll(tricky).end).toBe(tricky.length);
  });

  it('accepts chunk extensions', () => {
    for (const body of [
      '5;a=b\r\nhello\r\n0\r\n\r\n',
      '5;a\r\nhello\r\n0\r\n\r\n',
      '5;a=b;c=d\r\nhello\r\n0;last\r\n\r\n',
      '5;a-1=b.c_d!\r\nhello\r\n0\r\n\r\n',
    ]) {
      const { end, scanner } = scanAll(body);
      expect(end, JSON.stringify(body)).toBe(body.length);
      expect(scanner.done).toBe(true);
    }
  });

  it('accepts upper, lower and mixed case hex and leading zeros', () => {
    const data = 'y'.repeat(0xab);
    for (const size of ['AB', 'ab', 'aB', 'Ab', '00ab', '000000000000000ab'.slice(1)]) {
      const body = `${size}\r\n${data}\r\n0\r\n\r\n`;
      expect(scanAll(body).end, size).toBe(body.length);
    }
    const f = `F\r\n${'z'.repeat(15)}\r\n0\r\n\r\n`;
    expect(scanAll(f).end).toBe(f.length);
  });

  it('accepts 16 hex digits for the last chunk size', () => {
    const body = '0000000000000000\r\n\r\n';
    expect(scanAll(body).end).toBe(body.length);
  });

  it('accepts trailer fields', () => {
    for (const body of [
      '5\r\nhello\r\n0\r\nX-Checksum: abc\r\n\r\n',
      '5\r\nhello\r\n0\r\nA: 1\r\nB: 2\r\nc:\r\n\r\n',
      '0\r\nX-T:\tv a l \xe9\r\n\r\n',
      '0\r\nX-T: a:b:c\r\n\r\n',
    ]) {
      const { end, scanner } = scanAll(body);
      expect(end, JSON.stringify(body)).toBe(body.length);
      expect(scanner.done).toBe(true);
    }
  });

  it('does not consume bytes after the end: the returned index points at them', () => {
    const next = 'POST /next HTTP/1.1\r\nHost: a\r\n\r\n';
    const buf = b(BODY + next);
    const scanner = new ChunkedScanner();
    const end = scanner.scan(buf, 0, buf.length);
    expect(end).toBe(BODY.length);
    expect(buf.toString('latin1', end)).toBe(next);
    expect(scanner.done).toBe(true);
    // Even when the rest is garbage.
    const junk = b(`${BODY}\x00\x00zz`);
    expect(new ChunkedScanner().scan(junk, 0, junk.length)).toBe(BODY.length);
  });

  it('scans inside a larger buffer from a non-zero start, never past `to`', () => {
    const head = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n';
    const buf = b(`${head}${BODY}trailing`);
    const scanner = new ChunkedScanner();
    expect(scanner.scan(buf, head.length, head.length + 8)).toBe(head.length + 8);
    expect(scanner.scan(buf, head.length + 8, buf.length)).toBe(head.length + BODY.length);
    // `to` short of the end: not done, no byte beyond `to` looked at.
    const s2 = new ChunkedScanner();
    const cut = b(`${BODY.slice(0, -1)}X`);
    expect(s2.scan(cut, 0, BODY.length - 1)).toBe(BODY.length - 1);
    expect(s2.done).toBe(false);
    expect(s2.failed).toBe(false);
  });
});

describe('ChunkedScanner: malformed bodies → -1', () => {
  const bad: Array<[string, string]> = [
    ['missing CRLF after data', '5\r\nhelloX\r\n0\r\n\r\n'],
    ['data longer than the size', '5\r\nhello!\r\n0\r\n\r\n'],
    ['data shorter than the size', '5\r\nhell\r\n0\r\n\r\n'],
    ['LF without CR after data', '5\r\nhello\n0\r\n\r\n'],
    ['CR without LF after data', '5\r\nhello\rX0\r\n\r\n'],
    ['non-hex size', 'g\r\nhello\r\n0\r\n\r\n'],
    ['size with 0x prefix', '0x5\r\nhello\r\n0\r\n\r\n'],
    ['negative size', '-5\r\nhello\r\n0\r\n\r\n'],
    ['size with a sign', '+5\r\nhello\r\n0\r\n\r\n'],
    ['empty size line', '\r\nhello\r\n0\r\n\r\n'],
    ['empty size line after a chunk', '5\r\nhello\r\n\r\n0\r\n\r\n'],
    ['17 hex digits', '00000000000000005\r\nhello\r\n0\r\n\r\n'],
    ['17 zero digits for the last chunk', '00000000000000000\r\n\r\n'],
    ['LF without CR after the size', '5\nhello\r\n0\r\n\r\n'],
    ['CR without LF after the size', '5\rhello\r\n0\r\n\r\n'],
    ['LF without CR after an extension', '5;a=b\nhello\r\n0\r\n\r\n'],
    ['LF without CR after the last chunk', '0\n\r\n'],
    ['LF without CR ending the body', '0\r\n\n'],
    ['LF without CR after a trailer', '0\r\nX: y\n\r\n'],
    ['space before ;', '5 ;a=b\r\nhello\r\n0\r\n\r\n'],
    ['tab before ;', '5\t;a=b\r\nhello\r\n0\r\n\r\n'],
    ['space after the size', '5 \r\nhello\r\n0\r\n\r\n'],
    ['leading space before the size', ' 5\r\nhello\r\n0\r\n\r\n'],
    ['size then junk', '5x\r\nhello\r\n0\r\n\r\n'],
    ['NUL in an extension', '5;a\x00\r\nhello\r\n0\r\n\r\n'],
    ['DEL in an extension', '5;a\x7f\r\nhello\r\n0\r\n\r\n'],
    ['trailer line without colon', '0\r\nX-T\r\n\r\n'],
    // Never laxer than Node's strict parser (it refuses these): no empty or spaced extensions,
    // no quoted extension values, token trailer names, no framing fields as trailers.
    ['an empty extension', '1;\r\na\r\n0\r\n\r\n'],
    ['an empty extension value', '1;a=\r\na\r\n0\r\n\r\n'],
    ['a space after ;', '1; ext\r\na\r\n0\r\n\r\n'],
    ['a space inside an extension', '5;a b\r\nhello\r\n0\r\n\r\n'],
    ['a quoted extension value', '5;a="b c"\r\nhello\r\n0\r\n\r\n'],
    ['a tab after an extension', '5;a=b\t\r\nhello\r\n0\r\n\r\n'],
    ['a space before a trailer colon', '0\r\nx : 1\r\n\r\n'],
    ['a space inside a trailer name', '0\r\na b: c\r\n\r\n'],
    ['Content-Length as a trailer', '0\r\nContent-Length: 5\r\n\r\n'],
    ['Transfer-Encoding as a trailer', '0\r\ntransfer-encoding: chunked\r\n\r\n'],
    ['trailer starting with SP', '0\r\n X-T: v\r\n\r\n'],
    ['trailer starting with HTAB', '0\r\n\tX-T: v\r\n\r\n'],
    ['obs-fold after a trailer', '0\r\nX-T: v\r\n w\r\n\r\n'],
    ['trailer with empty name', '0\r\n: v\r\n\r\n'],
    ['NUL in a trailer', '0\r\nX-T: a\x00b\r\n\r\n'],
    ['bare CR in a trailer', '0\r\nX-T: a\rb\r\n\r\n'],
    ['trailer starting with a CTL', '0\r\n\x01X: v\r\n\r\n'],
    ['trailer starting with DEL', '0\r\n\x7fX: v\r\n\r\n'],
    ['CR then non-LF at the end', '0\r\n\rX'],
  ];

  for (const [name, body] of bad) {
    it(`refuses ${name}`, () => {
      const { end, scanner } = scanAll(body);
      expect(end).toBe(-1);
      expect(scanner.failed).toBe(true);
      expect(scanner.done).toBe(false);
    });

    it(`refuses ${name}, fed one byte at a time`, () => {
      const scanner = new ChunkedScanner();
      const buf = b(body);
      let result = 0;
      for (let i = 0; i < buf.length && result !== -1 && !scanner.done; i++) result = scanner.scan(buf, i, i + 1);
      expect(result).toBe(-1);
      expect(scanner.failed).toBe(true);
    });
  }

  it('stays failed after -1: later bytes, even valid ones, are refused', () => {
    const scanner = new ChunkedScanner();
    const badBuf = b('z\r\n');
    expect(scanner.scan(badBuf, 0, badBuf.length)).toBe(-1);
    expect(scanner.failed).toBe(true);
    const good = b('0\r\n\r\n');
    expect(scanner.scan(good, 0, good.length)).toBe(-1);
    expect(scanner.failed).toBe(true);
    expect(scanner.done).toBe(false);
  });

  it('fails at the first bad byte, not later', () => {
    const scanner = new ChunkedScanner();
    const buf = b('5\r\nhelloXX');
    expect(scanner.scan(buf, 0, 8)).toBe(8);
    expect(scanner.failed).toBe(false);
    expect(scanner.scan(buf, 8, 9)).toBe(-1);
  });

  it('bounds chunk-extension bytes per chunk by maxTrailerBytes', () => {
    // The bytes after `;` count, up to the limit inclusive.
    const ext = `;${'e'.repeat(64)}`;
    const ok = `5${ext}\r\nhello\r\n5${ext}\r\nhello\r\n0\r\n\r\n`;
    expect(scanAll(ok, 64).end).toBe(ok.length);
    const long = `5;${'e'.repeat(65)}\r\nhello\r\n0\r\n\r\n`;
    expect(scanAll(long, 64).end).toBe(-1);
  });

  it('bounds the trailer section by maxTrailerBytes', () => {
    const small = `0\r\nX: ${'v'.repeat(20)}\r\n\r\n`;
    expect(scanAll(small, 64).end).toBe(small.length);
    const big = `0\r\nX: ${'v'.repeat(200)}\r\n\r\n`;
    expect(scanAll(big, 64).end).toBe(-1);
    const many = `0\r\n${'A: 123456\r\n'.repeat(20)}\r\n`;
    expect(scanAll(many, 64).end).toBe(-1);
    expect(scanAll(many).end).toBe(many.length);
  });
});
