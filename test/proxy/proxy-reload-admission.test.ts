/**
 * `maxConnections` across a reload: a listener replaced on the same address takes over the
 * running socket, and with it the socket's admission — the connections the old listener
 * accepted still count until they close. With both slots taken by requests in flight on the
 * old listener, a new connection is refused and the requests complete; a silent connection the
 * old listener accepted is idle, so it makes room for a new one, the oldest first.
 */
import http from 'node:http';
import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { normalizeProxyConfig } from '../../src/proxy/config/proxy-config.js';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { type Backend, startBackend, startProxy, waitFor } from './helpers.js';

let fast: Backend;
let held: Backend;
/** Responses `held` has not answered yet; `release()` answers them. */
const waiting: http.ServerResponse[] = [];
let proxy: ProxyServer | undefined;

function release(): void {
  for (const res of waiting.splice(0)) res.end('held\n');
}

function config(idleTimeoutMs: number): unknown {
  return {
    listeners: [{ name: 'small', address: '127.0.0.1:0', limits: { maxConnections: 2, idleTimeoutMs } }],
    clusters: [
      { name: 'fast', target: `static:///${fast.key}` },
      { name: 'held', target: `static:///${held.key}` },
    ],
    routes: [
      { hosts: ['held.test'], cluster: 'held' },
      { hosts: ['*'], cluster: 'fast' },
    ],
  };
}

/** One GET on a new connection: the status, or the error code when the connection is refused. */
function get(port: number, host: string): Promise<string> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent: false, headers: { host } }, (res) => {
      res.resume();
      res.once('end', () => resolve(String(res.statusCode)));
    });
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

function silent(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

/** The proxy's `evenlb_proxy_downstream_connections` for the listener. */
async function openConnections(p: ProxyServer): Promise<number> {
  const text = await p.metrics.registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith('evenlb_proxy_downstream_connections{listener="small"}'));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

beforeAll(async () => {
  fast = await startBackend('fast', '127.0.0.93');
  held = await startBackend('held', '127.0.0.94', {
    handler: (req, res) => {
      req.resume();
      waiting.push(res);
    },
  });
});

afterEach(async () => {
  release();
  await proxy?.close();
  proxy = undefined;
});

afterAll(async () => {
  await Promise.all([fast, held].map((b) => b?.close()));
});

describe('maxConnections across a reload', () => {
  it("a replaced listener's requests in flight still fill the limit: a new connection is refused, they complete", async () => {
    const p = await startProxy(config(60_000));
    proxy = p;
    const port = p.listenerPort('small') as number;
    const inFlight = [get(port, 'held.test'), get(port, 'held.test')];
    await waitFor(() => waiting.length === 2, 5000, 'two requests at the upstream');
    // A changed listener on the same address: it takes over the running socket.
    await p.reload(normalizeProxyConfig(config(30_000)));
    expect(p.listenerPort('small')).toBe(port);
    // Both admitted connections are the old listener's, busy: nothing may make room.
    expect(await get(port, 'fast.test')).toMatch(/^(ECONNRESET|socket hang up|EPIPE)$/);
    release();
    expect(await Promise.all(inFlight)).toEqual(['200', '200']);
    // Once they closed, the new listener serves.
    await waitFor(async () => (await get(port, 'fast.test')) === '200', 5000, 'a request after the old ones closed');
  });

  it('a silent connection the replaced listener accepted makes room for a new one, the oldest first', async () => {
    const p = await startProxy(config(60_000));
    proxy = p;
    const port = p.listenerPort('small') as number;
    const first = await silent(port);
    const second = await silent(port);
    const closed = (s: net.Socket): Promise<void> => new Promise((r) => s.once('close', () => r()));
    const firstClosed = closed(first);
    first.on('error', () => {});
    second.on('error', () => {});
    await waitFor(async () => (await openConnections(p)) === 2, 5000, 'both connections accepted');
    await p.reload(normalizeProxyConfig(config(30_000)));
    // The default first-byte deadline is 10 s: only admission can close the oldest now.
    expect(await get(port, 'fast.test')).toBe('200');
    await firstClosed;
    expect(second.destroyed).toBe(false);
    second.destroy();
  });
});
