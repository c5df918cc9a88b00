/**
 * Protocol upgrades (WebSocket) through the proxy's HTTP/1.1 data path: the upgrade request
 * goes to one picked endpoint with the forwarding headers added, the endpoint's 101 reaches
 * the client, and from then on bytes flow both ways with backpressure until either side
 * closes. An endpoint that declines gets its answer passed back; `Upgrade: h2c` is ignored.
 * Real node:http servers (their `upgrade` event) and node:http clients on loopback.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { startProxy, waitFor } from './helpers.js';

interface UpgradeBackend {
  readonly name: string;
  readonly key: string;
  upgrades: number;
  lastHeaders: http.IncomingHttpHeaders | undefined;
  readonly sockets: Set<Socket>;
  readonly server: http.Server;
}

/** A server that echoes every byte after switching to `x-echo`, or declines when asked to. */
async function startUpgradeBackend(name: string, address: string): Promise<UpgradeBackend> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': name.length });
    res.end(name);
  });
  const backend: UpgradeBackend = {
    name,
    key: '',
    upgrades: 0,
    lastHeaders: undefined,
    sockets: new Set(),
    server,
  };
  server.on('upgrade', (req: http.IncomingMessage, socket: Socket, head: Buffer) => {
    backend.lastHeaders = req.headers;
    if (req.url === '/decline') {
      socket.end('HTTP/1.1 426 Upgrade Required\r\ncontent-length: 7\r\nconnection: close\r\n\r\ndecline');
      return;
    }
    backend.upgrades++;
    backend.sockets.add(socket);
    socket.once('close', () => backend.sockets.delete(socket));
    socket.on('error', () => {});
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nupgrade: x-echo\r\nconnection: Upgrade\r\nx-backend: ${name}\r\n\r\n`,
    );
    if (head.length > 0) socket.write(head);
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(backend, { key: `${address}:${port}` });
}

interface Upgraded {
  readonly socket: Socket;
  readonly response: http.IncomingMessage;
}

function upgrade(port: number, path: string, protocol = 'x-echo'): Promise<Upgraded | http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      path,
      headers: { host: 'ws.test', connection: 'Upgrade', upgrade: protocol },
      agent: false,
    });
    req.once('upgrade', (response, socket, head) => {
      if (head.length > 0) socket.unshift(head);
      resolve({ socket, response });
    });
    req.once('response', (response) => resolve(response));
    req.once('error', reject);
    req.end();
  });
}

function isUpgraded(x: Upgraded | http.IncomingMessage): x is Upgraded {
  return (x as Upgraded).response !== undefined;
}

/** Writes `text` and reads until as many bytes came back. */
function echo(socket: Socket, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = '';
    const timer = setTimeout(() => reject(new Error(`echo timed out, got ${JSON.stringify(got)}`)), 5000);
    const onData = (c: Buffer): void => {
      got += c.toString('latin1');
      if (got.length >= text.length) {
        clearTimeout(timer);
        socket.off('data', onData);
        resolve(got);
      }
    };
    socket.on('data', onData);
    socket.write(text, 'latin1');
  });
}

let backends: UpgradeBackend[] = [];
let proxy: ProxyServer;
let port = 0;

beforeAll(async () => {
  backends = await Promise.all([
    startUpgradeBackend('w1', '127.0.0.181'),
    startUpgradeBackend('w2', '127.0.0.182'),
    startUpgradeBackend('w3', '127.0.0.183'),
  ]);
  proxy = await startProxy({
    listeners: [{ name: 'web', address: '127.0.0.1:0' }],
    clusters: [{ name: 'ws', target: `static:///${backends.map((b) => b.key).join(',')}`, policy: 'round-robin' }],
  });
  port = proxy.listenerPort('web') as number;
});

afterAll(async () => {
  await proxy?.close();
  for (const b of backends) {
    for (const s of b.sockets) s.destroy();
    b.server.closeAllConnections();
    await new Promise<void>((resolve) => b.server.close(() => resolve()));
  }
});

describe('protocol upgrades through the proxy', () => {
  it('tunnels bytes both ways after the endpoint switches protocols, with forwarding headers', async () => {
    const up = await upgrade(port, '/chat');
    expect(isUpgraded(up)).toBe(true);
    if (!isUpgraded(up)) return;
    expect(up.response.statusCode).toBe(101);
    expect(up.response.headers.upgrade).toBe('x-echo');
    expect(String(up.response.headers.via)).toContain('1.1 evenlb');
    const backend = backends.find((b) => b.name === up.response.headers['x-backend']) as UpgradeBackend;
    expect(backend.lastHeaders?.upgrade).toBe('x-echo');
    expect(String(backend.lastHeaders?.connection).toLowerCase()).toBe('upgrade');
    expect(backend.lastHeaders?.['x-forwarded-for']).toBe('127.0.0.1');
    expect(String(backend.lastHeaders?.via)).toContain('1.1 evenlb');
    expect(await echo(up.socket, 'hello through the tunnel')).toBe('hello through the tunnel');
    expect(await echo(up.socket, 'and again')).toBe('and again');
    up.socket.destroy();
  });

  it('balances upgrade requests over the endpoints (round-robin: 4 each of 12)', async () => {
    const before = backends.map((b) => b.upgrades);
    const tunnels: Upgraded[] = [];
    for (let i = 0; i < 12; i++) {
      const up = await upgrade(port, `/room/${i}`);
      if (!isUpgraded(up)) throw new Error(`upgrade ${i} answered ${up.statusCode}`);
      tunnels.push(up);
    }
    expect(backends.map((b, i) => b.upgrades - (before[i] as number))).toEqual([4, 4, 4]);
    // Every tunnel still works while the others are open.
    const replies = await Promise.all(tunnels.map((t, i) => echo(t.socket, `msg-${i}`)));
    expect(replies).toEqual(tunnels.map((_t, i) => `msg-${i}`));
    for (const t of tunnels) t.socket.destroy();
  });

  it('carries 8 MiB each way through a tunnel intact (backpressure, no loss)', async () => {
    const up = await upgrade(port, '/bulk');
    if (!isUpgraded(up)) throw new Error('not upgraded');
    const total = 8 * 1024 * 1024;
    const sent = createHash('sha256');
    const received = createHash('sha256');
    let got = 0;
    const done = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${got} bytes came back`)), 20_000);
      up.socket.on('data', (c: Buffer) => {
        received.update(c);
        got += c.length;
        if (got >= total) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    let seed = 7;
    for (let off = 0; off < total; off += 64 * 1024) {
      const chunk = Buffer.allocUnsafe(64 * 1024);
      for (let i = 0; i < chunk.length; i += 4) {
        seed = (seed * 1103515245 + 12345) >>> 0;
        chunk.writeUInt32LE(seed, i);
      }
      sent.update(chunk);
      if (!up.socket.write(chunk)) await new Promise((r) => up.socket.once('drain', r));
    }
    await done;
    expect(got).toBe(total);
    expect(received.digest('hex')).toBe(sent.digest('hex'));
    up.socket.destroy();
  });

  it('closes the endpoint side when the client goes away, and the client side when the endpoint does', async () => {
    const a = await upgrade(port, '/a');
    if (!isUpgraded(a)) throw new Error('not upgraded');
    const backendA = backends.find((b) => b.name === a.response.headers['x-backend']) as UpgradeBackend;
    const openBefore = backendA.sockets.size;
    a.socket.destroy();
    await waitFor(() => backendA.sockets.size < openBefore, 3000);

    const b = await upgrade(port, '/b');
    if (!isUpgraded(b)) throw new Error('not upgraded');
    const backendB = backends.find((x) => x.name === b.response.headers['x-backend']) as UpgradeBackend;
    const closed = new Promise<void>((resolve) => b.socket.once('close', () => resolve()));
    for (const s of backendB.sockets) s.destroy();
    await closed;
  });

  // node:http clients report any answer to an upgrade request through 'upgrade' (with the
  // rest of the bytes on the socket) or 'response'; read the status and body either way.
  async function answer(
    res: Upgraded | http.IncomingMessage,
    bytes: number,
  ): Promise<{ status: number; body: string }> {
    const stream = isUpgraded(res) ? res.socket : res;
    const status = (isUpgraded(res) ? res.response.statusCode : res.statusCode) ?? 0;
    const body = await new Promise<string>((resolve) => {
      let text = '';
      const timer = setTimeout(() => resolve(text), 3000);
      stream.on('data', (c: Buffer) => {
        text += c.toString('latin1');
        if (text.length >= bytes) {
          clearTimeout(timer);
          resolve(text);
        }
      });
    });
    if (isUpgraded(res)) res.socket.destroy();
    return { status, body };
  }

  it('passes back an endpoint that declines the upgrade', async () => {
    const res = await upgrade(port, '/decline');
    expect(await answer(res, 7)).toEqual({ status: 426, body: 'decline' });
  });

  it('ignores an h2c upgrade: the request is answered as plain HTTP/1.1', async () => {
    const res = await upgrade(port, '/plain', 'h2c');
    const { status, body } = await answer(res, 2);
    expect(status).toBe(200);
    expect(backends.map((b) => b.name)).toContain(body);
  });
});
