/**
 * The corpus of the HTTP/1.1 parser differential test: the tables of targeted mutations
 * (Content-Length and Transfer-Encoding variants, odd bytes in names and values, bare CR/LF, NUL,
 * obs-fold, chunk-size and trailer variants, missing CRLFs, HTTP/1.0, absolute-form targets, Host
 * duplicates) and the seeded generator that applies 0–2 of them to a valid request followed by a
 * pipelined probe.
 */
import type { SeededRandom } from '../../src/core/random.js';
import {
  addLine,
  type Case,
  chunkedBody,
  type Draft,
  type Mutation,
  payload,
  pick,
  recordPicks,
  removeHeader,
  setHeader,
  useChunked,
  useLength,
} from './parser-differential-draft.js';

const CL_VALUES: readonly ((n: number) => string)[] = [
  (n) => `+${n}`,
  (n) => `-${n}`,
  (n) => `0${n}`,
  (n) => `000${n}`,
  (n) => ` ${n}`,
  (n) => `${n} `,
  (n) => `\t${n}\t`,
  (n) => `${n},${n}`,
  (n) => `${n}, ${n}`,
  (n) => `${n},${n + 1}`,
  () => '',
  (n) => `0x${n.toString(16)}`,
  (n) => `${n}.0`,
  (n) => `${n} ${n}`,
  (n) => `${n}\x0b`,
  () => '99999999999999999999',
  () => '18446744073709551617',
  () => '9007199254740993',
  () => '1e1',
  (n) => `${n}a`,
  (n) => `"${n}"`,
];

const TE_VALUES: readonly string[] = [
  'Chunked',
  'CHUNKED',
  ' chunked',
  'chunked ',
  '\tchunked',
  'chunked\t',
  'chunked, chunked',
  'chunked,chunked',
  'identity',
  'identity, chunked',
  'gzip, chunked',
  'chunked, gzip',
  'chunked\x0b',
  '\x0bchunked',
  'chunked\x0c',
  'chunk',
  'chunked;',
  'chunked;q=1',
  'x-chunked',
  '"chunked"',
  ', chunked',
  'chunked,',
  '',
  'chunked\x00',
  'ch\xfcnked',
];

const ODD_NAMES: readonly string[] = [
  'Transfer-Encoding ',
  'Content-Length ',
  'Transfer-Encoding\t',
  ' Transfer-Encoding',
  '\tTransfer-Encoding',
  'Transfer_Encoding',
  'Transfer-Encoding\x00',
  'Content-Length\x0b',
  'X-Foo\x7f',
  'X Foo',
  '',
  'X-F\xf6o',
  'X-Foo\x01',
  'Host ',
  'X-Foo"',
  'X-Foo(',
  'X-Foo/',
  'X-Foo@',
  'X-Foo{',
  "X-!#$%&'*+-.^_`|~",
];

const ODD_VALUE_BYTES: readonly string[] = [
  '\x00',
  '\x7f',
  '\r',
  '\n',
  '\x0b',
  '\x0c',
  '\x01',
  '\x1f',
  '\x80',
  '\xff',
  '\t',
];

const CHUNK_SIZES: readonly ((n: number) => string)[] = [
  (n) => n.toString(16).toUpperCase(),
  (n) => `0${n.toString(16)}`,
  (n) => `000000000000000${n.toString(16)}`,
  (n) => `0000000000000000000${n.toString(16)}`,
  (n) => `0x${n.toString(16)}`,
  (n) => ` ${n.toString(16)}`,
  (n) => `${n.toString(16)} `,
  (n) => `${n.toString(16)}\t`,
  (n) => `${n.toString(16)};ext`,
  (n) => `${n.toString(16)};ext=val`,
  (n) => `${n.toString(16)};ext="q v"`,
  (n) => `${n.toString(16)};a=1;b=2`,
  (n) => `${n.toString(16)} ;ext`,
  (n) => `${n.toString(16)}; ext`,
  (n) => `${n.toString(16)};`,
  (n) => `${n.toString(16)};a b`,
  (n) => `${n.toString(16)};a=b c`,
  (n) => `${n.toString(16)};a="b`,
  (n) => `${n.toString(16)};a\x00`,
  (n) => `${n.toString(16)};a=\x7f`,
  (n) => `${n.toString(16)};\xff`,
  (n) => `-${n.toString(16)}`,
  (n) => `+${n.toString(16)}`,
  () => 'FFFFFFFFFFFFFFFFF',
  () => '10000000000000000',
  () => 'FFFFFFFFFFFFFFFF',
  () => '20000000000001',
  (n) => `${n.toString(16)}g`,
  () => '',
];

const MUTATIONS: Readonly<Record<string, Mutation>> = {
  'cl-value'(rnd, d) {
    const n = rnd.int(12);
    useLength(rnd, d, n);
    setHeader(d, 'Content-Length', pick(rnd, CL_VALUES)(n));
  },
  'cl-duplicate'(rnd, d) {
    const n = 1 + rnd.int(10);
    useLength(rnd, d, n);
    addLine(
      d,
      `Content-Length: ${pick(rnd, [String(n), String(n + 1), `0${n}`, String(n - 1)])}`,
      rnd.int(d.lines.length + 1),
    );
  },
  'cl-mismatch'(rnd, d) {
    const n = 2 + rnd.int(10);
    useLength(rnd, d, n);
    d.body = payload(rnd, n + pick(rnd, [-1, 1, 5]));
  },
  'te-value'(rnd, d) {
    useChunked(rnd, d);
    setHeader(d, 'Transfer-Encoding', pick(rnd, TE_VALUES));
  },
  'te-duplicate'(rnd, d) {
    useChunked(rnd, d);
    addLine(d, `Transfer-Encoding: ${pick(rnd, ['chunked', 'identity', 'gzip'])}`, rnd.int(d.lines.length + 1));
  },
  'te-obs-fold'(rnd, d) {
    useChunked(rnd, d);
    const i = d.lines.findIndex((l) => l.startsWith('Transfer-Encoding:'));
    d.lines[i] = `Transfer-Encoding:${pick(rnd, ['', ' identity', ' gzip,'])}`;
    addLine(d, pick(rnd, [' chunked', '\tchunked', ' ', '\t']), i + 1);
  },
  'cl-and-te'(rnd, d) {
    const n = 1 + rnd.int(10);
    if (rnd.int(2) === 0) {
      useChunked(rnd, d);
      addLine(d, `Content-Length: ${n}`, rnd.int(d.lines.length + 1));
    } else {
      useLength(rnd, d, n);
      addLine(d, `Transfer-Encoding: ${pick(rnd, ['chunked', 'identity', 'Chunked'])}`, rnd.int(d.lines.length + 1));
    }
  },
  'odd-name'(rnd, d) {
    const name = pick(rnd, ODD_NAMES);
    const value = name.toLowerCase().includes('content-length') ? String(d.body.length) : 'chunked';
    addLine(d, `${name}: ${value}`, rnd.int(d.lines.length + 1));
  },
  'odd-value-byte'(rnd, d) {
    const i = rnd.int(d.lines.length);
    const line = d.lines[i] as string;
    const at = line.indexOf(':') + 1 + rnd.int(Math.max(1, line.length - line.indexOf(':')));
    d.lines[i] = `${line.slice(0, at)}${pick(rnd, ODD_VALUE_BYTES)}${line.slice(at)}`;
  },
  'bare-eol'(rnd, d) {
    const i = rnd.int(d.eols.length + 1);
    const eol = pick(rnd, ['\n', '\r', '\r\r\n', '\n\r']);
    if (i === d.eols.length) d.endEol = eol;
    else d.eols[i] = eol;
  },
  nul(rnd, d) {
    const i = rnd.int(d.lines.length + 1);
    if (i === d.lines.length) {
      const at = rnd.int(d.requestLine.length + 1);
      d.requestLine = `${d.requestLine.slice(0, at)}\x00${d.requestLine.slice(at)}`;
    } else {
      const line = d.lines[i] as string;
      const at = rnd.int(line.length + 1);
      d.lines[i] = `${line.slice(0, at)}\x00${line.slice(at)}`;
    }
  },
  'obs-fold'(rnd, d) {
    addLine(d, `${pick(rnd, [' ', '\t'])}folded`, 1 + rnd.int(d.lines.length));
  },
  'chunk-size'(rnd, d) {
    useChunked(rnd, d);
    const n = 1 + rnd.int(12);
    d.body = `${pick(rnd, CHUNK_SIZES)(n)}\r\n${payload(rnd, n)}\r\n0${pick(rnd, ['', ';x', ';x=1'])}\r\n\r\n`;
  },
  'chunk-crlf'(rnd, d) {
    useChunked(rnd, d);
    const n = 1 + rnd.int(12);
    const data = payload(rnd, n);
    const eol = (): string => pick(rnd, ['\r\n', '\r\n', '\n', '\r', '', '\r\r\n']);
    d.body = `${n.toString(16)}${eol()}${data}${eol()}0${eol()}${eol()}`;
  },
  'chunk-data-length'(rnd, d) {
    useChunked(rnd, d);
    const n = 2 + rnd.int(12);
    d.body = `${n.toString(16)}\r\n${payload(rnd, n + pick(rnd, [-1, 1, 2]))}\r\n0\r\n\r\n`;
  },
  trailers(rnd, d) {
    useChunked(rnd, d);
    const trailers = [
      'X-T: v',
      'Content-Length: 5',
      'Transfer-Encoding: chunked',
      'a b: c',
      ' folded',
      'x:\x00',
      'bad',
      ':x',
      'x: \x7f',
      'x:\xff',
      'x\x7f: 1',
      'x : 1',
      'x;: 1',
      'x:',
    ];
    const count = 1 + rnd.int(2);
    const chosen: string[] = [];
    for (let i = 0; i < count; i++) chosen.push(pick(rnd, trailers));
    d.body = chunkedBody(rnd, [1 + rnd.int(8)], chosen);
  },
  'multi-chunk'(rnd, d) {
    useChunked(rnd, d);
    const sizes = [1 + rnd.int(20), 1 + rnd.int(20), 1 + rnd.int(300)];
    d.body = chunkedBody(rnd, sizes);
  },
  'http-1.0'(rnd, d) {
    d.version = 'HTTP/1.0';
    if (rnd.int(2) === 0) removeHeader(d, 'host');
    if (rnd.int(2) === 0) setHeader(d, 'Connection', 'keep-alive');
  },
  version(rnd, d) {
    d.version = pick(rnd, [
      'HTTP/1.2',
      'HTTP/2.0',
      'http/1.1',
      'HTTP/01.1',
      'HTTP/1.1 ',
      'HTTP/1',
      'HTTP/1.10',
      'HTTP /1.1',
      'HTTP/0.9',
    ]);
  },
  'absolute-form'(rnd, d) {
    d.target = pick(rnd, [
      'http://h.example/p',
      'http://h.example',
      'https://h.example:443/p?q=1',
      'http://user@h.example/p',
      'http://other.example/p',
      'h.example:80',
      '*',
      '//h.example/p',
    ]);
  },
  'odd-target'(rnd, d) {
    const ch = pick(rnd, [
      '"',
      '<',
      '>',
      '{',
      '}',
      '|',
      '\\',
      '^',
      '`',
      '#frag',
      '%zz',
      '\x80',
      '\xff',
      '\x7f',
      '\x01',
      '\t',
      '?a=b c',
    ]);
    const at = 1 + rnd.int(d.target.length);
    d.target = `${d.target.slice(0, at)}${ch}${d.target.slice(at)}`;
  },
  host(rnd, d) {
    switch (rnd.int(5)) {
      case 0:
        addLine(d, `Host: ${pick(rnd, ['h.example', 'other.example'])}`, rnd.int(d.lines.length + 1));
        break;
      case 1:
        removeHeader(d, 'host');
        break;
      case 2:
        setHeader(d, 'Host', '');
        break;
      case 3:
        setHeader(
          d,
          'Host',
          pick(rnd, ['h.example, other.example', 'h ex', 'h.example:80', '[::1]:80', 'h.example\t']),
        );
        break;
      default:
        addLine(d, `host: h.example`, rnd.int(d.lines.length + 1));
    }
  },
  'request-line'(rnd, d) {
    const sep = pick(rnd, ['  ', '\t', ' \t']);
    const parts = [d.method, d.target, d.version];
    const at = rnd.int(2);
    d.requestLine = `${parts.slice(0, at + 1).join(' ')}${sep}${parts.slice(at + 1).join(' ')}`;
  },
  method(rnd, d) {
    d.method = pick(rnd, ['get', 'FOO', 'GETT', 'M-SEARCH', 'PROPFIND', 'PURGE', 'G\xc9T', 'GET/']);
  },
  'leading-eol'(rnd, d) {
    d.prefix = pick(rnd, ['\r\n', '\r\n\r\n', '\n', ' ', '\r']);
  },
  expect(rnd, d) {
    setHeader(d, 'Expect', pick(rnd, ['100-continue', '100-Continue']));
  },
  'second-with-body'(rnd, d) {
    d.tail = pick(rnd, [
      'POST /second HTTP/1.1\r\nHost: h.example\r\nContent-Length: 3\r\n\r\nabc',
      'POST /second HTTP/1.1\r\nHost: h.example\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n',
      'GET /second HTTP/1.1\r\nHost: h.example\r\n\r\n',
    ]);
  },
};

const MUTATION_NAMES = Object.keys(MUTATIONS);

/** Case `id`: a valid request, 0–2 mutations, a pipelined probe. */
export function generate(rnd: SeededRandom, id: number): Case {
  const method = pick(rnd, ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD']);
  const d: Draft = {
    requestLine: '',
    method,
    target: pick(rnd, ['/', '/a', '/a/b?c=d', '/x.y', '/%20']),
    version: 'HTTP/1.1',
    lines: [],
    eols: ['\r\n'],
    endEol: '\r\n',
    prefix: '',
    body: '',
    tail: `GET /probe-${id} HTTP/1.1\r\nHost: h.example\r\n\r\n`,
    tags: [],
    details: [],
  };
  addLine(d, 'Host: h.example');
  if (rnd.int(2) === 0) addLine(d, `User-Agent: fuzz/${id}`);
  if (rnd.int(3) === 0) addLine(d, 'Accept: */*');
  const framing = rnd.int(3);
  if (framing === 1) useLength(rnd, d, rnd.int(20));
  else if (framing === 2) useChunked(rnd, d);
  const count = rnd.int(10) === 0 ? 0 : 1 + rnd.int(2);
  for (let i = 0; i < count; i++) {
    const name = pick(rnd, MUTATION_NAMES);
    const chosen = recordPicks(() => (MUTATIONS[name] as Mutation)(rnd, d));
    d.details.push(`${name}(${chosen.join(' ')})`);
    d.tags.push(name);
  }
  if (d.tags.length === 0) d.tags.push('valid');
  if (d.requestLine === '') d.requestLine = `${d.method} ${d.target} ${d.version}`;
  let head = d.prefix + d.requestLine + (d.eols[0] as string);
  for (let i = 0; i < d.lines.length; i++) head += (d.lines[i] as string) + (d.eols[i + 1] as string);
  head += d.endEol;
  return { id, bytes: Buffer.from(head + d.body + d.tail, 'latin1'), tags: d.tags, details: d.details };
}
