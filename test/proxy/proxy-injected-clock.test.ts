/**
 * The proxy reads time only through the `Clock` it is given: an L4 connection's age limit and
 * an L7 listener's request-head timeout fire when a `ManualClock` is advanced past them, never
 * on real time. Real sockets; nothing waits on wall-clock time except bounded event waits.
 */
import net from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { createRandom } from '../../src/core/random.js';
import { normalizeProxyConfig } from '../../src/proxy/config/proxy-config.js';
import { ProxyServer } from '../../src/proxy/proxy-server.js';
import { quietLogger, startTcpEcho, waitFor } from './helpers.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function proxyOn(clock: ManualClock, config: unknown): Promise<ProxyServer> {
  const proxy = await ProxyServer.start(normalizeProxyConfig(config), {
    logger: quietLogger,
    clock,
    random: createRandom(7),
  });
  cleanup.push(() => proxy.destroy());
  return proxy;
}

/** A connected client socket that records when it closed. */
async function connect(port: number): Promise<{ socket: net.Socket; closed: () => boolean }> {
  const socket = net.connect(port, '127.0.0.1');
  let closed = false;
  socket.on('error', () => {});
  socket.on('close', () => (closed = true));
  await new Promise<void>((r) => socket.once('connect', () => r()));
  cleanup.push(async () => socket.destroy());
  return { socket, closed: () => closed };
}

describe('proxy on an injected clock', () => {
  test('a tcp listener ends a connection at its (jittered) age only when the clock says so', async () => {
    const clock = new ManualClock();
    const upstream = await startTcpEcho(cleanup);
    const proxy = await proxyOn(clock, {
      listeners: [{ name: 'l4', address: '127.0.0.1:0', protocol: 'tcp', cluster: 'c', maxConnectionAgeMs: 10_000 }],
      clusters: [{ name: 'c', target: `static:///127.0.0.1:${upstream}` }],
    });
    const client = await connect(proxy.listenerPort('l4') as number);
    // Proves the pipe is up (the age timer is armed on the upstream connect).
    client.socket.write('ping');
    await new Promise<void>((r) => client.socket.once('data', () => r()));
    clock.advance(8_900); // below the earliest jittered age (0.9 × 10 s)
    // Give a real timer every chance to fire first: a round trip through the proxy.
    client.socket.write('again');
    await new Promise<void>((r) => client.socket.once('data', () => r()));
    expect(client.closed()).toBe(false);
    clock.advance(2_200); // past the latest (1.1 × 10 s)
    await waitFor(client.closed, 5_000, 'the connection ended at its age');
  });

  test('an http listener times out an incomplete request head on the injected clock', async () => {
    const clock = new ManualClock();
    const upstream = await startTcpEcho(cleanup);
    const proxy = await proxyOn(clock, {
      listeners: [{ name: 'web', address: '127.0.0.1:0', limits: { headersTimeoutMs: 1_000 } }],
      clusters: [{ name: 'c', target: `static:///127.0.0.1:${upstream}` }],
      routes: [{ cluster: 'c' }],
    });
    const client = await connect(proxy.listenerPort('web') as number);
    let answer = '';
    client.socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    client.socket.write('GET / HTTP/1.1\r\nHost: a.test\r\n');
    // Advance in small steps, yielding to I/O between them, until the proxy answers 408: the
    // head timeout cannot fire before 1 s of clock time, and fires soon after (sweep ≤ 250 ms).
    let advancedMs = 0;
    while (!client.closed() && advancedMs < 5_000) {
      clock.advance(50);
      advancedMs += 50;
      await new Promise<void>((r) => setTimeout(r, 1));
    }
    expect(advancedMs).toBeGreaterThanOrEqual(1_000);
    expect(advancedMs).toBeLessThan(5_000);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  });
});
