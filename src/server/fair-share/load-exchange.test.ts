import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { answerLoadRequest, LOAD_PROTOCOL, LoadExchangeClient } from './load-exchange.js';

const PATH = '/.well-known/evenlb/load';

/** A pod's load document on loopback, counting the connections its peers open. */
async function loadServer(
  load: number,
): Promise<{ port: number; connections: () => number; open: () => number; close: () => Promise<void> }> {
  let connections = 0;
  let open = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    answerLoadRequest(res, { protocol: LOAD_PROTOCOL, metric: 'connections', load, windowMs: 300 });
  });
  server.on('connection', (socket) => {
    connections++;
    open++;
    socket.on('close', () => open--);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    open: () => open,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const waitFor = async (cond: () => boolean, timeoutMs = 5000): Promise<void> => {
  const deadline = systemClock.now() + timeoutMs;
  while (!cond()) {
    if (systemClock.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
};

const exchangeClient = (timeoutMs: number): LoadExchangeClient =>
  new LoadExchangeClient({ clock: systemClock, timeoutMs, metric: 'connections', path: PATH, tls: false });

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('LoadExchangeClient', () => {
  it('regression: asks a peer over one kept connection, not a new connection per question', async () => {
    const peer = await loadServer(3);
    const exchange = exchangeClient(2000);
    cleanups.push(peer.close, () => exchange.close());
    for (let i = 0; i < 20; i++) {
      expect(await exchange.ask('127.0.0.1', peer.port)).toEqual({ ok: true, load: 3 });
    }
    expect(peer.connections()).toBe(1);
  });

  it('closes the connection of a peer that is no longer listed (keepOnly), and reconnects when asked again', async () => {
    const [a, b] = [await loadServer(1), await loadServer(2)];
    const exchange = exchangeClient(2000);
    cleanups.push(a.close, b.close, () => exchange.close());
    await exchange.ask('127.0.0.1', a.port);
    await exchange.ask('127.0.0.1', b.port);
    expect([a.open(), b.open()]).toEqual([1, 1]);
    exchange.keepOnly(new Set([exchange.origin('127.0.0.1', a.port)]));
    await waitFor(() => b.open() === 0);
    expect(a.open()).toBe(1);
    expect(await exchange.ask('127.0.0.1', b.port)).toEqual({ ok: true, load: 2 });
    expect(b.connections()).toBe(2);
  });

  it('answers a failure (never throws) for a peer that refuses, and closes everything on close()', async () => {
    const peer = await loadServer(5);
    const exchange = exchangeClient(1000);
    cleanups.push(peer.close);
    const gone = await loadServer(0);
    await gone.close();
    const refused = await exchange.ask('127.0.0.1', gone.port);
    expect(refused.ok).toBe(false);
    expect(await exchange.ask('127.0.0.1', peer.port)).toEqual({ ok: true, load: 5 });
    await exchange.close();
    await exchange.close();
    await waitFor(() => peer.open() === 0);
  });
});
