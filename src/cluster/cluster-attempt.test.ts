/**
 * The attempt path other transports use (`clusterInternals(cluster).acquire()`), on a `ManualClock` with no
 * sockets: an attempt ends once; `retry()` ends it with the failure's outcome, asks the
 * cluster's one retry policy, returns the next attempt on another endpoint and counts the
 * retry once (stats and observer) — the same rules the undici path follows.
 */
import { describe, expect, test } from 'vitest';
import { hashKey, type PickResult } from '../balancing/picker.js';
import { ManualClock } from '../core/clock.js';
import { EvenlbError } from '../core/errors.js';
import { SeededRandom } from '../core/random.js';
import { StaticEndpointSource } from '../discovery/static-endpoint-source.js';
import type { Attempt } from './attempt.js';
import { Cluster } from './cluster.js';
import { clusterInternals } from './cluster-internals.js';

function cluster(retryIdempotent = 0) {
  const events: string[] = [];
  const c = new Cluster({
    name: 'svc:80',
    target: new StaticEndpointSource([
      { address: '10.0.0.1', port: 80 },
      { address: '10.0.0.2', port: 80 },
    ]),
    policy: 'round-robin',
    retryIdempotent,
    outlierDetection: false,
    clock: new ManualClock(),
    random: new SeededRandom(7),
    observer: {
      requestEnded: (_c, key, outcome) => events.push(`${key} ${outcome}`),
      retried: (_c, reason) => events.push(`retry ${reason}`),
    },
  });
  return { c, events };
}

function pickKey(r: PickResult): string {
  if (r.type === 'none') throw new Error(r.reason);
  return r.endpoint.key;
}

const GET = { method: 'GET', replayable: true, responded: false };
const POST = { method: 'POST', replayable: true, responded: false };

describe('Cluster attempts', () => {
  const cases = [
    { failure: { type: 'connect-failure' } as const, request: POST, retryIdempotent: 0, reasons: ['connect-failure'] },
    {
      failure: { type: 'reused-connection' } as const,
      request: GET,
      retryIdempotent: 0,
      reasons: ['reused-connection'],
    },
    { failure: { type: 'reused-connection' } as const, request: POST, retryIdempotent: 0, reasons: [] },
    { failure: { type: 'status', status: 503 } as const, request: GET, retryIdempotent: 1, reasons: ['idempotent'] },
    { failure: { type: 'status', status: 503 } as const, request: GET, retryIdempotent: 0, reasons: [] },
    { failure: { type: 'transport-error' } as const, request: POST, retryIdempotent: 3, reasons: [] },
  ];
  for (const k of cases) {
    test(`${k.failure.type}${'status' in k.failure ? ` ${k.failure.status}` : ''}, ${k.request.method}, retryIdempotent ${k.retryIdempotent} → ${k.reasons.join(',') || 'no retry'}`, async () => {
      const { c, events } = cluster(k.retryIdempotent);
      const first = clusterInternals(c).acquire() as Attempt;
      expect(first).not.toBeInstanceOf(EvenlbError);
      const next = first.retry(k.failure, k.request);
      first.end('success'); // ignored: the attempt already ended
      if (k.reasons.length === 0) {
        expect(next).toBeUndefined();
      } else {
        expect(next).not.toBeInstanceOf(EvenlbError);
        const attempt = next as Attempt;
        expect(attempt.endpoint.key).not.toBe(first.endpoint.key);
        attempt.end('success');
      }
      const outcome =
        k.failure.type === 'status'
          ? 'http-error'
          : k.failure.type === 'connect-failure'
            ? 'connect-failure'
            : 'transport-error';
      expect(events[0]).toBe(`${first.endpoint.key} ${outcome}`);
      expect(events.filter((e) => e.startsWith('retry ')).map((e) => e.slice(6))).toEqual(k.reasons);
      expect(c.stats().retries).toBe(k.reasons.length);
      await c.close();
    });
  }

  test('a retry budget is per request: a second connect failure is not retried', async () => {
    const { c } = cluster(0);
    const a = clusterInternals(c).acquire() as Attempt;
    const b = a.retry({ type: 'connect-failure' }, POST) as Attempt;
    expect(b.retry({ type: 'connect-failure' }, POST)).toBeUndefined();
    expect(c.stats().retries).toBe(1);
    await c.close();
  });

  test('after close, acquire fails with EVENLB_CLOSED', async () => {
    const { c } = cluster();
    await c.close();
    const r = clusterInternals(c).acquire();
    expect(r instanceof EvenlbError && r.code).toBe('EVENLB_CLOSED');
  });

  test('a hashed acquire (a TCP client address) picks by the hash, its retry too; unhashed acquires do not inherit it', async () => {
    const c = new Cluster({
      name: 'tcp:5432',
      target: new StaticEndpointSource([1, 2, 3, 4].map((i) => ({ address: `10.0.0.${i}`, port: 5432 }))),
      policy: 'maglev',
      outlierDetection: false,
      clock: new ManualClock(),
      random: new SeededRandom(3),
    });
    await c.whenDiscovered();
    const picker = clusterInternals(c).balancer.picker;
    const unhashed = new Set<string>();
    for (const hash of [hashKey('127.0.0.1'), hashKey('127.0.0.2'), hashKey('10.9.8.7')]) {
      const a = clusterInternals(c).acquire(undefined, hash) as Attempt;
      expect(a.endpoint.key).toBe(pickKey(picker.pick({ hash })));
      const b = a.retry({ type: 'connect-failure' }, POST) as Attempt;
      expect(b.endpoint.key).toBe(pickKey(picker.pick({ hash, exclude: a.endpoint.key })));
      expect(b.endpoint.key).not.toBe(a.endpoint.key);
      b.end('success');
      for (let i = 0; i < 20; i++) {
        const u = clusterInternals(c).acquire() as Attempt;
        unhashed.add(u.endpoint.key);
        u.end('success');
      }
    }
    // Without a hash maglev picks at random: more than the one endpoint a stale hash would give.
    expect(unhashed.size).toBeGreaterThan(1);
    await c.close();
  });
});
