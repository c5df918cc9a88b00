/**
 * Retries exhausted → the last upstream response as it was: a 503 with `Retry-After`, a body
 * and trailers from both endpoints reaches HTTP/1.1, HTTP/1.0 and h2c clients unchanged after
 * the retry; also when the retry target disappears between the decision to retry and the
 * attempt. A response is withheld only while a retry will really be made, and only up to the
 * retry buffer: a larger body is passed through and not retried. With a single endpoint a
 * retryable status is retried on that same endpoint.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { type Backend, startBackend, startProxy, waitFor } from './helpers.js';
import { ask, type ClientProtocol } from './protocol-clients.js';

const PROTOCOLS: readonly ClientProtocol[] = ['HTTP/1.1', 'HTTP/1.0', 'h2c'];
const BIG_BYTES = 200 * 1024;

function busy(name: string) {
  return (_req: http.IncomingMessage, res: http.ServerResponse): void => {
    res.writeHead(503, { 'retry-after': '7', 'content-type': 'text/plain', 'x-backend': name, trailer: 'x-why' });
    res.write(`busy ${name}\n`);
    res.addTrailers({ 'x-why': 'overloaded' });
    res.end();
  };
}

let a: Backend;
let b: Backend;
let flaky: Backend;
let slowA: Backend;
let other: Backend;
let big: Backend;
let bigOther: Backend;
let release: (() => void) | undefined;
let proxy: ProxyServer;
let port = 0;
let dir = '';
let file = '';
let flakyCount = 0;

function writeEndpoints(keys: readonly string[]): void {
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

beforeAll(async () => {
  a = await startBackend('a', '127.0.0.111', { handler: busy('a') });
  b = await startBackend('b', '127.0.0.112', { handler: busy('b') });
  flaky = await startBackend('flaky', '127.0.0.113', {
    handler: (_req, res) => {
      flakyCount++;
      if (flakyCount % 2 === 1) {
        res.writeHead(503, { 'retry-after': '1' });
        res.end('try again\n');
      } else res.end('fine\n');
    },
  });
  slowA = await startBackend('slowA', '127.0.0.114', {
    handler: (_req, res) => {
      res.writeHead(503, { 'retry-after': '7', 'x-backend': 'slowA' });
      res.write('busy ');
      release = () => res.end('slowA\n');
    },
  });
  other = await startBackend('other', '127.0.0.115');
  big = await startBackend('big', '127.0.0.116', {
    handler: (_req, res) => {
      res.writeHead(503, { 'content-length': BIG_BYTES, 'x-backend': 'big' });
      res.end(Buffer.alloc(BIG_BYTES, 0x61));
    },
  });
  bigOther = await startBackend('bigOther', '127.0.0.117');
  dir = mkdtempSync(join(tmpdir(), 'evenlb-retry-exhausted-'));
  file = join(dir, 'endpoints.json');
  writeEndpoints([slowA.key, other.key]);
  proxy = await startProxy({
    listeners: [{ name: 'web', address: '127.0.0.1:0' }],
    clusters: [
      { name: 'busy', target: `static:///${a.key},${b.key}`, policy: 'round-robin', retries: { idempotent: 1 } },
      { name: 'single', target: `static:///${flaky.key}`, retries: { idempotent: 1 } },
      { name: 'gone', target: `file://${file}`, policy: 'round-robin', retries: { idempotent: 1 } },
      {
        name: 'big',
        target: `static:///${big.key},${bigOther.key}`,
        policy: 'round-robin',
        retries: { idempotent: 1 },
      },
    ],
    routes: [
      { hosts: ['busy.test'], cluster: 'busy' },
      { hosts: ['single.test'], cluster: 'single' },
      { hosts: ['gone.test'], cluster: 'gone' },
      { hosts: ['big.test'], cluster: 'big' },
    ],
  });
  port = proxy.listenerPort('web') as number;
});

afterAll(async () => {
  release?.();
  await proxy?.close();
  await Promise.all([a, b, flaky, slowA, other, big, bigOther].map((x) => x?.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe('retries exhausted: the last upstream response as it was', () => {
  for (const protocol of PROTOCOLS) {
    it(`${protocol}: 503 with Retry-After, body and trailers from both endpoints reaches the client unchanged`, async () => {
      const hits = a.hits + b.hits;
      const r = await ask(protocol, port, 'busy.test');
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
      flakyCount = 0;
      const r = await ask(protocol, port, 'single.test');
      expect({ status: r.status, body: r.body }).toEqual({ status: 200, body: 'fine\n' });
      expect(flakyCount).toBe(2);
    });
  }

  for (const protocol of ['HTTP/1.1', 'h2c'] as const) {
    it(`${protocol}: the retry target disappears before the attempt: the withheld response is delivered`, async () => {
      writeEndpoints([slowA.key, other.key]);
      await waitFor(() => proxy.clusters.get('gone')?.balancer.picker.endpoints.length === 2, 5000, 'two endpoints');
      const hits = slowA.hits;
      const otherHits = other.hits;
      const pending = ask(protocol, port, 'gone.test');
      await waitFor(() => slowA.hits === hits + 1 || other.hits > otherHits, 5000, 'first attempt');
      if (other.hits > otherHits) {
        // Round robin started on the other endpoint: nothing to test this round.
        await pending;
        return;
      }
      writeEndpoints([]);
      await waitFor(() => proxy.clusters.get('gone')?.unavailableReason() !== undefined, 5000, 'endpoints gone');
      release?.();
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
    const hits = bigOther.hits;
    for (let i = 0; i < 2; i++) {
      const r = await ask('HTTP/1.1', port, 'big.test');
      if (r.headers['x-backend'] !== 'big') continue;
      expect(r.status).toBe(503);
      expect(r.body.length).toBe(BIG_BYTES);
      expect(bigOther.hits - hits).toBe(i);
      return;
    }
    throw new Error('the big endpoint was never picked');
  });
});
