/**
 * L4 `tcp` listeners with real sockets: least-connections spreads long-lived connections
 * evenly (connection counts feed the policy as "in flight"), maglev keeps each client address
 * on one backend across reconnects, `maxConnectionAgeMs` closes connections at their
 * jittered age so clients come back through the balancer, and at `maxConnections` a new
 * connection is refused: a tcp connection is never closed to make room, quiet or not.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { startProxy, waitFor } from './helpers.js';

interface EchoBackend {
  readonly name: string;
  readonly key: string;
  readonly server: net.Server;
  open: number;
  accepted: number;
  readonly peers: Set<string>;
}

async function echo(name: string, address: string): Promise<EchoBackend> {
  const b: EchoBackend = { name, key: '', server: net.createServer(), open: 0, accepted: 0, peers: new Set() };
  b.server.on('connection', (s) => {
    b.open++;
    b.accepted++;
    s.on('close', () => b.open--);
    s.on('error', () => {});
    s.on('data', (d) => s.write(`${name}:${d.toString()}`));
  });
  await new Promise<void>((r) => b.server.listen(0, address, r));
  Object.assign(b, { key: `${address}:${(b.server.address() as net.AddressInfo).port}` });
  return b;
}

let backends: EchoBackend[] = [];
let proxy: ProxyServer;

beforeAll(async () => {
  backends = await Promise.all([1, 2, 3, 4].map((i) => echo(`t${i}`, `127.0.0.${80 + i}`)));
  const target = `static:///${backends.map((b) => b.key).join(',')}`;
  proxy = await startProxy({
    listeners: [
      { name: 'lc', address: '127.0.0.1:0', protocol: 'tcp', cluster: 'lc' },
      { name: 'hash', address: '127.0.0.1:0', protocol: 'tcp', cluster: 'hash', balance: 'maglev' },
      { name: 'aged', address: '127.0.0.1:0', protocol: 'tcp', cluster: 'aged', maxConnectionAgeMs: 300 },
      { name: 'capped', address: '127.0.0.1:0', protocol: 'tcp', cluster: 'lc', limits: { maxConnections: 2 } },
    ],
    clusters: [
      { name: 'lc', target },
      { name: 'hash', target, policy: 'maglev' },
      { name: 'aged', target },
    ],
  });
});

afterAll(async () => {
  await proxy?.destroy();
  for (const b of backends) {
    b.server.close();
  }
});

/** Opens a connection, sends one line and resolves with the backend name that answered. */
function connect(port: number, localAddress?: string): Promise<{ socket: net.Socket; backend: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', ...(localAddress === undefined ? {} : { localAddress }) });
    socket.once('error', reject);
    socket.once('connect', () => socket.write('hi'));
    socket.once('data', (d) => resolve({ socket, backend: d.toString().split(':')[0] as string }));
  });
}

describe('tcp listeners', () => {
  it('least-connections spreads 40 long-lived connections evenly', async () => {
    const port = proxy.listenerPort('lc') as number;
    const open: net.Socket[] = [];
    for (let i = 0; i < 40; i++) open.push((await connect(port)).socket);
    const counts = backends.map((b) => b.open);
    for (const c of counts) expect(c).toBe(10);
    for (const s of open) s.destroy();
    await waitFor(() => backends.every((b) => b.open === 0), 5000, 'connections closed');
  });

  it('maglev keeps each client address on one backend across reconnects', async () => {
    const port = proxy.listenerPort('hash') as number;
    const clients = Array.from({ length: 12 }, (_, i) => `127.0.1.${i + 1}`);
    const first = new Map<string, string>();
    for (let round = 0; round < 3; round++) {
      for (const local of clients) {
        const { socket, backend } = await connect(port, local);
        socket.destroy();
        if (round === 0) first.set(local, backend);
        else expect(backend).toBe(first.get(local));
      }
    }
    // Different clients land on more than one backend.
    expect(new Set(first.values()).size).toBeGreaterThan(1);
  });

  it('closes connections at maxConnectionAgeMs (with jitter) so they re-balance', async () => {
    const port = proxy.listenerPort('aged') as number;
    const startMs = Date.now();
    const { socket } = await connect(port);
    const closedAfter = await new Promise<number>((resolve) =>
      socket.once('close', () => resolve(Date.now() - startMs)),
    );
    expect(closedAfter).toBeGreaterThanOrEqual(250);
    expect(closedAfter).toBeLessThan(2000);
  });

  it('at maxConnections refuses a new connection and never closes an open one to make room', async () => {
    const port = proxy.listenerPort('capped') as number;
    const open = [(await connect(port)).socket, (await connect(port)).socket];
    // Both are quiet now (nothing in flight): still not closed for a third.
    const third = await new Promise<string>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
      s.once('connect', () => s.write('hi'));
      s.once('data', () => resolve('served'));
      s.once('close', () => resolve('closed'));
    });
    expect(third).toMatch(/^(closed|ECONNRESET|EPIPE)$/);
    for (const s of open) {
      s.write('again');
      expect(String(await new Promise<Buffer>((r) => s.once('data', r)))).toMatch(/:again$/);
    }
    for (const s of open) s.destroy();
  });
});
