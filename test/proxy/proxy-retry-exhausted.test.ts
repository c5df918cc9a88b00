/**
 * Retries exhausted → the last upstream response as it was, for HTTP/1.1 and `h2` clusters: a
 * 503 with `Retry-After`, a body and trailers from both endpoints reaches HTTP/1.1, HTTP/1.0
 * and h2c clients unchanged after the retry; also when the retry target disappears between
 * the decision to retry and the attempt. A response is withheld only while a retry will really
 * be made, and only up to the retry buffer: a larger body is passed through and not retried.
 * With a single endpoint a retryable status is retried on that same endpoint.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type http from 'node:http';
import type { Http2Server } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { type Backend, type BackendOptions, startBackend, startH2Backend, startProxy, waitFor } from './helpers.js';
import { ask, type ClientProtocol } from './protocol-clients.js';

const PROTOCOLS: readonly ClientProtocol[] = ['HTTP/1.1', 'HTTP/1.0', 'h2c'];
const BIG_BYTES = 200 * 1024;
type Upstream = 'http1' | 'h2';
const UPSTREAMS: readonly Upstream[] = ['http1', 'h2'];

function busy(name: string) {
  return (_req: http.IncomingMessage, res: http.ServerResponse): void => {
    res.writeHead(503, { 'retry-after': '7', 'content-type': 'text/plain', 'x-backend': name, trailer: 'x-why' });
    res.write(`busy ${name}\n`);
    res.addTrailers({ 'x-why': 'overloaded' });
    res.end();
  };
}

type AnyBackend = Backend<http.Server | Http2Server>;

/** One upstream protocol's backends, endpoint file and cluster configs. */
interface Fixture {
  a: AnyBackend;
  b: AnyBackend;
  flaky: AnyBackend;
  slowA: AnyBackend;
  other: AnyBackend;
  big: AnyBackend;
  bigOther: AnyBackend;
  file: string;
  flakyCount: number;
  release: (() => void) | undefined;
}

const fixtures = new Map<Upstream, Fixture>();
let proxy: ProxyServer;
let port = 0;
let dir = '';

function writeEndpoints(file: string, keys: readonly string[]): void {
  const tmp = `${file}.tmp`;
  writeFileSync(
    tmp,
    JSON.stringify(
      keys.map((k) => {
        const [address, p] = k.split(':');
        return { address, port: Number(p) };
      }),
    ),
  );
  renameSync(tmp, file);
}

async function startFixture(upstream: Upstream, base: number): Promise<Fixture> {
  const start = (name: string, n: number, options: BackendOptions) =>
    upstream === 'h2'
      ? startH2Backend(`${name}`, `127.0.0.${base + n}`, options)
      : startBackend(`${name}`, `127.0.0.${base + n}`, options);
  const f = { flakyCount: 0, release: undefined, file: join(dir, `${upstream}-endpoints.json`) } as Fixture;
  f.a = await start('a', 1, { handler: busy('a') });
  f.b = await start('b', 2, { handler: busy('b') });
  f.flaky = await start('flaky', 3, {
    handler: (_req, res) => {
      f.flakyCount++;
      if (f.flakyCount % 2 === 1) {
        res.writeHead(503, { 'retry-after': '1' });
        res.end('try again\n');
      } else res.end('fine\n');
    },
  });
  f.slowA = await start('slowA', 4, {
    handler: (_req, res) => {
      res.writeHead(503, { 'retry-after': '7', 'x-backend': 'slowA' });
      res.write('busy ');
      f.release = () => res.end('slowA\n');
    },
  });
  f.other = await start('other', 5, {});
  f.big = await start('big', 6, {
    handler: (_req, res) => {
      res.writeHead(503, { 'content-length': BIG_BYTES, 'x-backend': 'big' });
      res.end(Buffer.alloc(BIG_BYTES, 0x61));
    },
  });
  f.bigOther = await start('bigOther', 7, {});
  writeEndpoints(f.file, [f.slowA.key, f.other.key]);
  return f;
}

function clustersOf(upstream: Upstream, f: Fixture): unknown[] {
  const common = { retries: { idempotent: 1 }, ...(upstream === 'h2' ? { protocol: 'h2' } : {}) };
  return [
    { name: `busy-${upstream}`, target: `static:///${f.a.key},${f.b.key}`, policy: 'round-robin', ...common },
    { name: `single-${upstream}`, target: `static:///${f.flaky.key}`, ...common },
    { name: `gone-${upstream}`, target: `file://${f.file}`, policy: 'round-robin', ...common },
    { name: `big-${upstream}`, target: `static:///${f.big.key},${f.bigOther.key}`, policy: 'round-robin', ...common },
  ];
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'evenlb-retry-exhausted-'));
  fixtures.set('http1', await startFixture('http1', 110));
  fixtures.set('h2', await startFixture('h2', 130));
  proxy = await startProxy({
    listeners: [{ name: 'web', address: '127.0.0.1:0' }],
    clusters: UPSTREAMS.flatMap((u) => clustersOf(u, fixtures.get(u) as Fixture)),
    routes: UPSTREAMS.flatMap((u) =>
      ['busy', 'single', 'gone', 'big'].map((c) => ({ hosts: [`${c}.${u}.test`], cluster: `${c}-${u}` })),
    ),
  });
  port = proxy.listenerPort('web') as number;
});

afterAll(async () => {
  for (const f of fixtures.values()) f.release?.();
  await proxy?.close();
  for (const f of fixtures.values()) {
    await Promise.all([f.a, f.b, f.flaky, f.slowA, f.other, f.big, f.bigOther].map((x) => x?.close()));
  }
  rmSync(dir, { recursive: true, force: true });
});

for (const upstream of UPSTREAMS) {
  describe(`${upstream} cluster: retries exhausted: the last upstream response as it was`, () => {
    const fx = (): Fixture => fixtures.get(upstream) as Fixture;

    for (const protocol of PROTOCOLS) {
      it(`${protocol}: 503 with Retry-After, body and trailers from both endpoints reaches the client unchanged`, async () => {
        const { a, b } = fx();
        const hits = a.hits + b.hits;
        const r = await ask(protocol, port, `busy.${upstream}.test`);
        expect(a.hits + b.hits - hits).toBe(2);
        expect(r.outcome).toBe('complete');
        expect(r.status).toBe(503);
        expect(r.reason).toBeUndefined();
        expect(r.headers['retry-after']).toBe('7');
        expect(r.body).toBe(`busy ${r.headers['x-backend']}\n`);
        if (protocol !== 'HTTP/1.0') expect(r.trailers['x-why']).toBe('overloaded');
      });
    }

    for (const protocol of PROTOCOLS) {
      it(`${protocol}: a single endpoint's retryable status is retried on that endpoint`, async () => {
        const f = fx();
        f.flakyCount = 0;
        const r = await ask(protocol, port, `single.${upstream}.test`);
        expect({ status: r.status, body: r.body }).toEqual({ status: 200, body: 'fine\n' });
        expect(f.flakyCount).toBe(2);
      });
    }

    for (const protocol of ['HTTP/1.1', 'h2c'] as const) {
      it(`${protocol}: the retry target disappears before the attempt: the withheld response is delivered`, async () => {
        const f = fx();
        const name = `gone-${upstream}`;
        writeEndpoints(f.file, [f.slowA.key, f.other.key]);
        await waitFor(() => proxy.clusters.get(name)?.balancer.picker.endpoints.length === 2, 5000, 'two endpoints');
        const hits = f.slowA.hits;
        const otherHits = f.other.hits;
        const pending = ask(protocol, port, `gone.${upstream}.test`);
        await waitFor(() => f.slowA.hits === hits + 1 || f.other.hits > otherHits, 5000, 'first attempt');
        if (f.other.hits > otherHits) {
          // Round robin started on the other endpoint: nothing to test this round.
          await pending;
          return;
        }
        writeEndpoints(f.file, []);
        await waitFor(() => proxy.clusters.get(name)?.unavailableReason() !== undefined, 5000, 'endpoints gone');
        f.release?.();
        const r = await pending;
        expect({ status: r.status, retryAfter: r.headers['retry-after'], body: r.body, reason: r.reason }).toEqual({
          status: 503,
          retryAfter: '7',
          body: 'busy slowA\n',
          reason: undefined,
        });
      });
    }

    it('a body larger than the retry buffer is passed through and not retried', async () => {
      const { bigOther } = fx();
      const hits = bigOther.hits;
      for (let i = 0; i < 2; i++) {
        const r = await ask('HTTP/1.1', port, `big.${upstream}.test`);
        if (r.headers['x-backend'] !== 'big') continue;
        expect(r.status).toBe(503);
        expect(r.body.length).toBe(BIG_BYTES);
        expect(bigOther.hits - hits).toBe(i);
        return;
      }
      throw new Error('the big endpoint was never picked');
    });
  });
}
