/**
 * What a reload compares against is what runs, in-process (`ProxyServer.reload`): a reload that
 * fails (a new listener on an address another socket holds) changes nothing — the changed
 * listener is not replaced, its keep-alive connections carry on, its port stays — and the same
 * change without the bad listener then applies (a port-0 listener keeps its port); a reload of
 * the running configuration replaces nothing.
 */
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/core/errors.js';
import { normalizeProxyConfig } from '../../src/proxy/config/proxy-config.js';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { type Backend, startBackend, startProxy, waitFor } from './helpers.js';

let backend: Backend;
let holder: net.Server;
let heldPort = 0;

beforeAll(async () => {
  backend = await startBackend('app', '127.0.0.1', {
    handler: (req, res) => {
      req.resume();
      // The client's side of the connection: tells whether a keep-alive connection survived.
      res.end(String(req.socket.remotePort));
    },
  });
  holder = net.createServer((s) => s.destroy());
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  heldPort = (holder.address() as net.AddressInfo).port;
});

afterAll(async () => {
  await backend.close();
  await new Promise<void>((resolve) => holder.close(() => resolve()));
});

const config = (web: Record<string, unknown>, more: Record<string, unknown>[] = []) => ({
  listeners: [{ name: 'web', address: '127.0.0.1:0', ...web }, ...more],
  clusters: [{ name: 'app', target: `static:///${backend.key}` }],
});

/** GET through `agent`; resolves with the proxy-side local port of the client's connection. */
function clientPort(port: number, agent: http.Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
      res.resume();
      res.once('end', () => resolve((req.socket as net.Socket).localPort as number));
    });
    req.once('error', reject);
  });
}

describe('ProxyServer.reload compares against what runs', () => {
  it('a failed reload replaces nothing; the same change then applies on the same port; the running configuration again is a no-op', async () => {
    const proxy: ProxyServer = await startProxy(config({}));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const port = proxy.listenerPort('web') as number;
      const first = await clientPort(port, agent);

      const changed = { limits: { idleTimeoutMs: 30_000 } };
      const failing = normalizeProxyConfig(config(changed, [{ name: 'extra', address: `127.0.0.1:${heldPort}` }]));
      await expect(proxy.reload(failing)).rejects.toMatchObject({
        code: ErrorCodes.LISTEN_FAILED,
        message: expect.stringMatching(/"listeners\[1\]\.address" cannot listen on .*EADDRINUSE/),
      });
      expect(proxy.listenerPort('web')).toBe(port);
      expect(proxy.config.listeners[0]?.limits.idleTimeoutMs).toBe(60_000);
      // Not replaced: the kept-alive connection still carries requests.
      expect(await clientPort(port, agent)).toBe(first);

      await proxy.reload(normalizeProxyConfig(config(changed)));
      expect(proxy.config.listeners[0]?.limits.idleTimeoutMs).toBe(30_000);
      expect(proxy.listenerPort('web')).toBe(port);
      // The replaced listener closed the idle connection: wait until the client saw it.
      await waitFor(() => Object.keys(agent.freeSockets).length === 0, 5_000, 'the old connection to close');
      const second = await clientPort(port, agent);
      expect(second).not.toBe(first);

      await proxy.reload(normalizeProxyConfig(config(changed)));
      expect(await clientPort(port, agent)).toBe(second);
    } finally {
      agent.destroy();
      await proxy.close();
    }
  });
});
