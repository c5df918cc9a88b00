/**
 * `H2SessionPool` as a transport only, on a `ManualClock`: it never picks, retries or keeps
 * load records — a session that cannot connect only answers `ready: false` (the caller's
 * attempt decides what happens next), and the connect timeout runs on the injected clock.
 * Regression: the pool used to pick, retry and end load records itself.
 */
import net from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { freePort } from '../../../test/support/tracked-server.js';
import { ManualClock } from '../../core/clock.js';
import { createEndpoint } from '../../core/endpoint.js';
import { SeededRandom } from '../../core/random.js';
import { LifetimePolicy } from '../../pool/lifetime-policy.js';
import { H2SessionPool } from './h2-session-pool.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

function pool(clock: ManualClock, changes: string[], tls = false): H2SessionPool {
  const p = new H2SessionPool({
    lifetime: new LifetimePolicy({}, new SeededRandom(2), 'test'),
    connectTimeoutMs: 5_000,
    clock,
    ...(tls ? { tls: { rejectUnauthorized: false } } : {}),
    onSessionChange: (key, change) => changes.push(`${key} ${change}`),
  });
  cleanup.push(() => p.destroy());
  return p;
}

describe('H2SessionPool (transport only)', () => {
  test('a refused connect is only `ready: false`: no retry, no session left, nothing reported opened', async () => {
    const endpoint = createEndpoint({ address: '127.0.0.1', port: await freePort('127.0.0.1') });
    const changes: string[] = [];
    const p = pool(new ManualClock(), changes);
    const lease = p.connectionFor(endpoint);
    expect(lease.endpointKey).toBe(endpoint.key);
    expect(await lease.ready).toBe(false);
    lease.release();
    lease.release(); // idempotent
    expect(p.opened).toBe(1);
    expect(changes).toEqual([]);
    // The next stream gets a new session (the failed one is gone), and fails the same way.
    const again = p.connectionFor(endpoint);
    expect(again.session === lease.session).toBe(false);
    expect(p.opened).toBe(2);
    expect(await again.ready).toBe(false);
    again.release();
  });

  test('the connect timeout runs on the injected clock', async () => {
    // A TCP server that never answers the TLS handshake: the session stays connecting.
    const silent = net.createServer(() => {});
    const sockets: net.Socket[] = [];
    silent.on('connection', (s) => sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    cleanup.push(async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    });
    const port = (silent.address() as net.AddressInfo).port;
    const clock = new ManualClock();
    const p = pool(clock, [], true);
    const lease = p.connectionFor(createEndpoint({ address: '127.0.0.1', port }));
    let settled: boolean | undefined;
    void lease.ready.then((ok) => {
      settled = ok;
    });
    // Wait until the TCP connection reached the server, then let the clock pass the timeout.
    for (let i = 0; i < 200 && sockets.length === 0; i++) await new Promise((r) => setImmediate(r));
    expect(sockets.length).toBe(1);
    expect(settled).toBeUndefined();
    clock.advance(4_999);
    await new Promise((r) => setImmediate(r));
    expect(settled).toBeUndefined();
    clock.advance(1);
    expect(await lease.ready).toBe(false);
    lease.release();
  });

  test('connectionFor after close() fails with EVENLB_CLOSED; close and destroy settle and are idempotent', async () => {
    const p = pool(new ManualClock(), []);
    await Promise.all([p.close(), p.close()]);
    await p.destroy();
    expect(() => p.connectionFor(createEndpoint({ address: '127.0.0.1', port: 1 }))).toThrow(
      expect.objectContaining({ code: 'EVENLB_CLOSED' }),
    );
  });
});
