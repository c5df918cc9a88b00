/**
 * A `tcp` listener's `maxConnectionAgeMs` is the project's one age rule: each connection's own
 * limit is drawn by `LifetimePolicy` (±10% default jitter) from the injected `Random`, and ends
 * on the injected `Clock`. On a `ManualClock`, every connection ends within [0.9, 1.1] × the
 * age; the ages differ from one connection to the next (the jitter is applied); the same seed
 * gives the same ages and another seed other ages (the jitter comes from the injected
 * `Random`, not from anywhere else). Real sockets; the clock moves in 1% steps and after each
 * step a round trip on an ageless connection lets the proxy's half-close reach the client.
 */
import net from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { createRandom } from '../../src/core/random.js';
import { normalizeProxyConfig } from '../../src/proxy/config/proxy-config.js';
import { ProxyServer } from '../../src/proxy/proxy-server.js';
import { quietLogger, startTcpEcho, waitFor } from './helpers.js';

const AGE_MS = 10_000;
const STEP_MS = AGE_MS / 100;
const CONNECTIONS = 8;

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** A connection whose upstream is up (one echo came back), so its age limit has been drawn. */
async function connected(port: number): Promise<net.Socket> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  cleanup.push(async () => socket.destroy());
  await new Promise<void>((r) => socket.once('connect', () => r()));
  await roundTrip(socket);
  return socket;
}

function roundTrip(socket: net.Socket): Promise<void> {
  return new Promise<void>((r) => {
    socket.once('data', () => r());
    socket.write('x');
  });
}

/**
 * The clock time at which each of `CONNECTIONS` connections through a tcp listener with
 * `maxConnectionAgeMs` ended, all opened at clock time 0, with the proxy's `Random` seeded.
 */
async function endTimes(seed: number): Promise<number[]> {
  const clock = new ManualClock();
  const upstream = await startTcpEcho(cleanup);
  const target = `static:///127.0.0.1:${upstream}`;
  const proxy = await ProxyServer.start(
    normalizeProxyConfig({
      listeners: [
        { name: 'aged', address: '127.0.0.1:0', protocol: 'tcp', cluster: 'aged', maxConnectionAgeMs: AGE_MS },
        { name: 'plain', address: '127.0.0.1:0', protocol: 'tcp', cluster: 'plain' },
      ],
      clusters: [
        { name: 'aged', target },
        { name: 'plain', target },
      ],
    }),
    { logger: quietLogger, clock, random: createRandom(seed) },
  );
  cleanup.push(() => proxy.destroy());
  const sentinel = await connected(proxy.listenerPort('plain') as number);
  const ended: (number | undefined)[] = [];
  for (let i = 0; i < CONNECTIONS; i++) {
    const socket = await connected(proxy.listenerPort('aged') as number);
    ended.push(undefined);
    const mark = () => (ended[i] ??= clock.now());
    socket.once('end', mark);
    socket.once('close', mark);
  }
  // Step through 1.2 × the age; each step's round trip lets a half-close made at that step arrive.
  while (clock.now() < 1.2 * AGE_MS && ended.some((t) => t === undefined)) {
    clock.advance(STEP_MS);
    await roundTrip(sentinel);
    await new Promise((r) => setImmediate(r));
  }
  await waitFor(() => ended.every((t) => t !== undefined), 5_000, 'every aged connection ended');
  return ended as number[];
}

describe('tcp listener connection age, through LifetimePolicy', () => {
  test('each connection ends within [0.9, 1.1] × maxConnectionAgeMs; same seed, same ages', async () => {
    const first = await endTimes(11);
    for (const t of first) {
      expect(t).toBeGreaterThanOrEqual(0.9 * AGE_MS);
      expect(t).toBeLessThanOrEqual(1.1 * AGE_MS);
    }
    // Jittered: connections opened together do not all end together.
    expect(new Set(first).size).toBeGreaterThan(CONNECTIONS / 2);
    // The jitter is drawn from the injected Random: the same seed replays it exactly...
    expect(await endTimes(11)).toEqual(first);
    // ...and another seed draws other ages.
    expect(await endTimes(12)).not.toEqual(first);
  });
});
