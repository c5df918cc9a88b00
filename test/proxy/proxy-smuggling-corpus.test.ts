/**
 * Smuggling regression corpus (issue #13): raw-byte requests and hostile backend responses
 * through every listener kind — the HTTP/1.1 data path (plain and TLS), the node:http path
 * (HTTP/1.0, `Expect`), HTTP/2 clients of the HTTP/1.1 cluster — to a recording raw TCP backend
 * that parses what it receives strictly. Each case asserts invariants, not exact output:
 *
 * 1. the backend never parses a request the client did not send (no `/smuggled`, no request
 *    without the corpus' ids, no more requests than the client sent, its stream always parses);
 * 2. every response the client got answers its own request, in order: the i-th response to a
 *    connection echoes request i (`x-seq`), nothing is answered twice, no `/poisoned` bytes;
 * 3. the client's byte stream parses strictly into those responses (a cut at the end allowed);
 * 4. a fresh client after the attacker gets the responses to its own two requests.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { testCertificates } from '../support/test-certificates.js';
import { startProxy } from './helpers.js';
import { type H2Request, h2Exchange, type RawExchange, rawExchange } from './smuggling/clients.js';
import { type RecordingBackend, startRecordingBackend } from './smuggling/recording-backend.js';
import { ids, type Kind, REQUEST_CASES, SMUGGLED } from './smuggling/request-cases.js';
import { RESPONSE_MODES } from './smuggling/response-modes.js';
import { parseResponses } from './smuggling/strict-http.js';

let backend: RecordingBackend;
let proxy: ProxyServer;
let dir: string;
let caseNumber = 0;

beforeAll(async () => {
  backend = await startRecordingBackend();
  dir = mkdtempSync(join(tmpdir(), 'evenlb-smuggling-'));
  const pki = testCertificates('app.test', 'smuggling');
  writeFileSync(join(dir, 'tls.crt'), pki.cert);
  writeFileSync(join(dir, 'tls.key'), pki.key);
  proxy = await startProxy({
    listeners: [
      { name: 'web', address: '127.0.0.1:0' },
      {
        name: 'secure',
        address: '127.0.0.1:0',
        protocol: 'https',
        tls: { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') },
      },
    ],
    clusters: [{ name: 'app', target: `static:///127.0.0.1:${backend.port}`, outlierDetection: false }],
  });
});

afterAll(async () => {
  await proxy?.close();
  await backend?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

const port = (kind: Kind): number => proxy.listenerPort(kind === 'tls' ? 'secure' : 'web') as number;

interface Echo {
  readonly case: string;
  readonly seq: string;
  readonly path: string;
}

function echoOf(body: string): Echo | undefined {
  try {
    const v = JSON.parse(body) as Echo;
    return typeof v.case === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}

/** Invariants 2 and 3 for a raw client connection. */
function checkClientStream(id: string, ex: RawExchange, methods: readonly string[]): string[] {
  const v: string[] = [];
  if (ex.timedOut) v.push('no complete answer and no close within the deadline');
  const parsed = parseResponses(ex.received, methods, ex.ended);
  if (parsed.error !== undefined && !(ex.ended && parsed.error.startsWith('truncated'))) {
    v.push(`client stream does not parse: ${parsed.error}`);
  }
  if (parsed.messages.length > methods.length)
    v.push(`${parsed.messages.length} responses to ${methods.length} requests`);
  parsed.messages.forEach((m, i) => {
    const body = m.body.toString('latin1');
    if (body.includes('/poisoned')) v.push(`response ${i + 1} carries poisoned bytes`);
    if (m.first !== '200' || methods[i] === 'HEAD') return;
    const echo = echoOf(body);
    if (echo === undefined) v.push(`response ${i + 1} is a 200 without the echo of its request: ${body.slice(0, 60)}`);
    else if (echo.case !== id || echo.seq !== String(i + 1) || echo.path.includes('smuggled')) {
      v.push(`response ${i + 1} answers another request: ${body}`);
    }
  });
  return v;
}

/** Invariant 1: what the backend saw for case `id` since `since` violations. */
function checkBackend(id: string, methods: readonly string[], violationsBefore: number): string[] {
  const v = backend.violations.slice(violationsBefore).map((x) => `backend: ${x}`);
  const seen = backend.requests.filter((r) => r.caseId === id);
  const seqs = new Set(seen.map((r) => r.seq));
  if (seqs.size > methods.length) v.push(`backend parsed ${seqs.size} requests, the client sent ${methods.length}`);
  for (const r of seen) {
    const n = Number(r.seq);
    if (!(n >= 1 && n <= methods.length) || methods[n - 1] !== r.method) {
      v.push(`backend parsed ${r.method} ${r.path} seq ${r.seq}: not a request the client sent`);
    }
  }
  return v;
}

/** Invariant 4: a fresh client of the same kind gets the answers to its own two requests. */
async function checkVictim(kind: Kind): Promise<string[]> {
  const id = `victim-${++caseNumber}`;
  if (kind === 'h2') {
    const results = await h2Exchange(
      port(kind),
      [1, 2].map((seq) => h2Get(id, seq, '/victim')),
    );
    return results.flatMap((r, i) => {
      const echo = echoOf(r.body);
      return r.status === 200 && echo?.case === id && echo.seq === String(i + 1) && echo.path === '/victim'
        ? []
        : [`victim stream ${i + 1} got ${r.status} ${r.error ?? ''} ${r.body.slice(0, 80)}`];
    });
  }
  const version = kind === 'fallback' ? 'HTTP/1.0' : 'HTTP/1.1';
  const keep = kind === 'fallback' ? 'Connection: keep-alive\r\n' : '';
  const bytes = [1, 2].map((seq) => `GET /victim ${version}\r\nHost: app.test\r\n${keep}${ids(id, seq)}\r\n`).join('');
  const ex = await rawExchange(port(kind), bytes, ['GET', 'GET'], 2, kind === 'tls');
  const parsed = parseResponses(ex.received, ['GET', 'GET'], ex.ended);
  const v = checkClientStream(id, ex, ['GET', 'GET']);
  if (parsed.messages.length !== 2 || parsed.messages.some((m) => m.first !== '200')) {
    v.push(
      `victim got ${parsed.messages.map((m) => m.first).join(',')}: ${ex.received.toString('latin1').slice(0, 200)}`,
    );
  }
  return v.map((x) => `victim: ${x}`);
}

function h2Get(id: string, seq: number, path: string, extra: Record<string, string> = {}): H2Request {
  return {
    headers: {
      ':method': 'GET',
      ':path': path,
      ':authority': 'app.test',
      'x-case': id,
      'x-seq': String(seq),
      ...extra,
    },
  };
}

/** Runs one raw attacker case and every invariant; returns the violations. */
async function rawCase(kind: Kind, bytes: (id: string) => string, methods: readonly string[]): Promise<string[]> {
  const id = `c${++caseNumber}`;
  const before = backend.violations.length;
  const ex = await rawExchange(port(kind), bytes(id), methods, methods.length, kind === 'tls');
  const v = [...checkClientStream(id, ex, methods), ...checkBackend(id, methods, before)];
  v.push(...(await checkVictim(kind)), ...checkBackend(id, methods, backend.violations.length));
  return v;
}

/** Runs HTTP/2 requests as the attacker and every invariant. */
async function h2Case(requests: (id: string) => H2Request[]): Promise<string[]> {
  const id = `c${++caseNumber}`;
  const before = backend.violations.length;
  const reqs = requests(id);
  const results = await h2Exchange(port('h2'), reqs);
  const v: string[] = [];
  results.forEach((r, i) => {
    if (r.body.includes('/poisoned')) v.push(`stream ${i + 1} carries poisoned bytes`);
    // A reset stream is HTTP/2's cut: allowed, as long as it carried nothing foreign.
    if (r.status !== 200 || r.error !== undefined || reqs[i]?.headers[':method'] === 'HEAD') return;
    const echo = echoOf(r.body);
    if (echo?.case !== id || echo.seq !== String(i + 1)) v.push(`stream ${i + 1}: 200 without its own echo: ${r.body}`);
  });
  v.push(
    ...checkBackend(
      id,
      reqs.map((r) => String(r.headers[':method'])),
      before,
    ),
  );
  v.push(...(await checkVictim('h2')));
  return v;
}

const requestTable = REQUEST_CASES.flatMap((c) => c.kinds.map((kind) => ({ label: `${kind}: ${c.name}`, kind, c })));

describe('smuggling corpus: raw requests', () => {
  it.each(requestTable)('$label', async ({ kind, c }) => {
    expect(await rawCase(kind, c.bytes, c.methods)).toEqual([]);
  });
});

const MODES = Object.keys(RESPONSE_MODES);
const responseTable = MODES.flatMap((mode) =>
  (['raw', 'tls', 'fallback', 'h2'] as const).map((kind) => ({ label: `${kind}: backend ${mode}`, kind, mode })),
);

describe('smuggling corpus: hostile backend responses', () => {
  it.each(responseTable)('$label', async ({ kind, mode }) => {
    const first = mode === 'head-body' ? 'HEAD' : 'GET';
    if (kind === 'h2') {
      const v = await h2Case((id) => [
        { headers: { ...h2Get(id, 1, `/r/${mode}`).headers, ':method': first } },
        h2Get(id, 2, '/p2'),
      ]);
      expect(v).toEqual([]);
      return;
    }
    const version = kind === 'fallback' ? 'HTTP/1.0' : 'HTTP/1.1';
    const keep = kind === 'fallback' ? 'Connection: keep-alive\r\n' : '';
    const line = (id: string, seq: number, method: string, path: string): string =>
      `${method} ${path} ${version}\r\nHost: app.test\r\n${keep}${ids(id, seq)}\r\n`;
    const v = await rawCase(kind, (id) => line(id, 1, first, `/r/${mode}`) + line(id, 2, 'GET', '/p2'), [first, 'GET']);
    expect(v).toEqual([]);
  });
});

const h2Post = (id: string, body: string, extra: Record<string, string> = {}): H2Request => ({
  headers: { ...h2Get(id, 1, '/p1').headers, ':method': 'POST', ...extra },
  body,
});

const h2Cases: { name: string; requests: (id: string) => H2Request[] }[] = [
  { name: 'body is a request, no content-length', requests: (id) => [h2Post(id, SMUGGLED)] },
  {
    name: 'body is a request, content-length matches',
    requests: (id) => [h2Post(id, SMUGGLED, { 'content-length': String(SMUGGLED.length) })],
  },
  {
    name: 'content-length shorter than the body',
    requests: (id) => [h2Post(id, `hello${SMUGGLED}`, { 'content-length': '5' })],
  },
  {
    name: 'content-length longer than the body',
    requests: (id) => [h2Post(id, SMUGGLED, { 'content-length': '500' })],
  },
  {
    name: ':authority with userinfo',
    requests: (id) => [h2Get(id, 1, '/p1', { ':authority': 'app.test:80@evil.test' })],
  },
  { name: ':authority with a path', requests: (id) => [h2Get(id, 1, '/p1', { ':authority': 'app.test/admin' })] },
  {
    name: 'forged forwarding headers',
    requests: (id) => [
      h2Get(id, 1, '/p1', { 'x-forwarded-for': '6.6.6.6', forwarded: 'for=6.6.6.6', 'x-real-ip': '6.6.6.6' }),
    ],
  },
  {
    name: 'HEAD and GET concurrently',
    requests: (id) => [h2Get(id, 1, '/p1', { ':method': 'HEAD' }), h2Get(id, 2, '/p2')],
  },
];

describe('smuggling corpus: HTTP/2 clients of an HTTP/1.1 cluster', () => {
  it.each(h2Cases)('h2: $name', async ({ requests }) => {
    expect(await h2Case(requests)).toEqual([]);
  });
});

describe('smuggling corpus: size', () => {
  it('has at least 100 cases over every listener kind', () => {
    const total = requestTable.length + responseTable.length + h2Cases.length;
    expect(total).toBeGreaterThanOrEqual(100);
    const kinds = new Set([...requestTable.map((r) => r.kind), ...responseTable.map((r) => r.kind)]);
    expect([...kinds].sort()).toEqual(['fallback', 'h2', 'raw', 'tls']);
  });
});
