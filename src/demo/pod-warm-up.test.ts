import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_LOAD_PATH } from '../server/fair-share/fair-share-options.js';
import { LOAD_PROTOCOL } from '../server/fair-share/load-exchange.js';
import { WARM_UP_CONNECTIONS, warmUpLoadExchange } from './pod-warm-up.js';

/** A pod's load port: answers the load document in `metric`, counting questions and connections. */
async function loadServer(
  metric: string,
): Promise<{ server: Server; port: number; asked: () => number; connections: () => number }> {
  let asked = 0;
  let connections = 0;
  const server = createServer((req, res) => {
    if (req.url !== DEFAULT_LOAD_PATH) {
      res.writeHead(404).end();
      return;
    }
    asked++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ protocol: LOAD_PROTOCOL, metric, load: 3, windowMs: 0 }));
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, asked: () => asked, connections: () => connections };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

describe('warmUpLoadExchange', () => {
  it('asks the load document the given number of times, a few at once over kept connections', async () => {
    const s = await loadServer('connections');
    servers.push(s.server);
    await warmUpLoadExchange('127.0.0.1', s.port, 48, 'connections');
    expect(s.asked()).toBe(48);
    // The exchange's own client keeps one connection per peer: the warm-up's loops share it.
    expect(s.connections()).toBeLessThanOrEqual(WARM_UP_CONNECTIONS);
  });

  // The demo's sidecar pods once warmed the exchange with node:http, which left the client side
  // — undici's client and its llhttp WebAssembly, used by nothing else in a pod — to compile at
  // the pod's first question to a peer, once listed. Only the exchange's own client reads the
  // document's fields: an answer in another metric fails the warm-up.
  it('goes through the exchange client itself: an answer in another metric fails it', async () => {
    const s = await loadServer('requests-per-second');
    servers.push(s.server);
    await expect(warmUpLoadExchange('127.0.0.1', s.port, 8, 'connections')).rejects.toThrow(
      /load exchange warm-up: peer measures requests-per-second, not connections/,
    );
  });

  it('does nothing for a count of 0', async () => {
    const s = await loadServer('connections');
    servers.push(s.server);
    await warmUpLoadExchange('127.0.0.1', s.port, 0, 'connections');
    expect(s.asked()).toBe(0);
  });
});
