/**
 * Every state of a client connection has a deadline: before the first byte (and a partial
 * HTTP/2 preface), the TLS handshake, the request head, each read of a request body, and an
 * HTTP/2 session with no open stream. Each close is counted by reason in
 * `evenlb_proxy_downstream_closed_total`. At `maxConnections` the oldest idle connection is
 * closed to make room for a new one, and connections with a request in flight are never
 * touched: a new connection is refused instead.
 */

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { testCertificates } from '../support/test-certificates.js';
import { type Backend, fetchText, startBackend, startProxy, waitFor } from './helpers.js';

let backend: Backend;
let slow: Backend;
let proxy: ProxyServer;
let dir = '';

/** Resolves with how long the proxy took to close `socket` (ms), or rejects after `boundMs`. */
function closedWithin(socket: net.Socket, boundMs: number): Promise<number> {
  const startMs = Date.now();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`connection still open after ${boundMs} ms`)), boundMs);
    socket.on('error', () => {});
    // Read whatever the proxy says last, so its close is seen.
    socket.resume();
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(Date.now() - startMs);
    });
  });
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

function metricValue(text: string, reason: string, listener: string): number {
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`evenlb_proxy_downstream_closed_total{listener="${listener}",reason="${reason}"}`));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

beforeAll(async () => {
  backend = await startBackend('b', '127.0.0.71');
  slow = await startBackend('slow', '127.0.0.72', { delayMs: 600 });
  const pki = testCertificates('deadlines.test');
  dir = mkdtempSync(join(tmpdir(), 'evenlb-deadlines-'));
  const cert = { cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') };
  writeFileSync(cert.cert, pki.cert);
  writeFileSync(cert.key, pki.key);
  proxy = await startProxy({
    admin: { address: '127.0.0.1:0' },
    listeners: [
      {
        name: 'web',
        address: '127.0.0.1:0',
        limits: {
          firstByteTimeoutMs: 300,
          headersTimeoutMs: 400,
          bodyReadTimeoutMs: 400,
          h2IdleTimeoutMs: 400,
        },
      },
      {
        name: 'tls',
        address: '127.0.0.1:0',
        protocol: 'https',
        tls: { cert: cert.cert, key: cert.key },
        limits: { tlsHandshakeTimeoutMs: 300 },
      },
      { name: 'small', address: '127.0.0.1:0', limits: { maxConnections: 4 } },
      { name: 'h2c-small', address: '127.0.0.1:0', limits: { maxConnections: 2 } },
      {
        name: 'tls-small',
        address: '127.0.0.1:0',
        protocol: 'https',
        tls: { cert: cert.cert, key: cert.key },
        limits: { maxConnections: 2 },
      },
    ],
    clusters: [
      { name: 'b', target: `static:///${backend.key}` },
      { name: 'slow', target: `static:///${slow.key}` },
    ],
    routes: [
      { hosts: ['slow.test'], cluster: 'slow' },
      { hosts: ['*'], cluster: 'b' },
    ],
  });
});

afterAll(async () => {
  await proxy?.close();
  await Promise.all([backend, slow].map((b) => b?.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe('connection deadlines', () => {
  it('a connection that sends nothing is closed by the first-byte deadline', async () => {
    const s = await connect(proxy.listenerPort('web') as number);
    const ms = await closedWithin(s, 5000);
    expect(ms).toBeGreaterThanOrEqual(250);
  });

  it('a partial HTTP/2 preface is closed by the first-byte deadline', async () => {
    const s = await connect(proxy.listenerPort('web') as number);
    s.write('PRI * HTTP/2.0\r\n');
    await closedWithin(s, 5000);
  });

  it('a partial request head is closed by the head deadline', async () => {
    const s = await connect(proxy.listenerPort('web') as number);
    s.write('GET / HTTP/1.1\r\nHost: a.test\r\n');
    await closedWithin(s, 5000);
  });

  it('a request body that stops arriving is cut by the body read deadline', async () => {
    const s = await connect(proxy.listenerPort('web') as number);
    s.write('POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 100\r\n\r\n0123456789');
    await closedWithin(s, 5000);
  });

  it('a TLS client that never finishes its handshake is closed by the handshake deadline', async () => {
    const s = await connect(proxy.listenerPort('tls') as number);
    await closedWithin(s, 5000);
  });

  it('an HTTP/2 session with no open stream is closed by the session idle deadline', async () => {
    const session = http2.connect(`http://127.0.0.1:${proxy.listenerPort('web')}`);
    session.on('error', () => {});
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('session still open after 5 s')), 5000);
      session.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  });

  it('counts each deadline close by reason', async () => {
    const text = (await fetchText(proxy.adminPort as number, '/metrics')).body;
    for (const reason of ['first-byte', 'request-head', 'request-body', 'tls-handshake', 'h2-idle'])
      expect(metricValue(text, reason, reason === 'tls-handshake' ? 'tls' : 'web'), reason).toBeGreaterThanOrEqual(1);
  });

  it('a connection that keeps sending requests is not closed by any deadline', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const sockets = new Set<unknown>();
      for (let i = 0; i < 8; i++) {
        await new Promise<void>((resolve, reject) => {
          const req = http.get(
            { host: '127.0.0.1', port: proxy.listenerPort('web'), path: '/', agent, headers: { host: 'a.test' } },
            (res) => {
              sockets.add(req.socket);
              res.resume();
              res.on('end', () => resolve());
            },
          );
          req.on('error', reject);
        });
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(sockets.size).toBe(1);
    } finally {
      agent.destroy();
    }
  });
});

describe('maxConnections', () => {
  function get(port: number, agent: http.Agent | false, host = 'a.test'): Promise<number> {
    return new Promise((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/', agent, headers: { host } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        })
        .on('error', reject);
    });
  }

  it('at the limit the oldest idle connection makes room for a new one', async () => {
    const port = proxy.listenerPort('small') as number;
    const agents = [0, 1, 2, 3].map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
    try {
      const sockets: net.Socket[] = [];
      for (const agent of agents) {
        expect(await get(port, agent)).toBe(200);
        const free = Object.values(agent.freeSockets)[0]?.[0];
        if (free !== undefined) sockets.push(free);
      }
      expect(sockets).toHaveLength(4);
      const oldest = sockets[0] as net.Socket;
      const closed = new Promise<void>((r) => oldest.once('close', () => r()));
      expect(await get(port, false)).toBe(200);
      await closed;
      // The others are still open and usable.
      for (const agent of agents.slice(1)) expect(await get(port, agent)).toBe(200);
    } finally {
      for (const a of agents) a.destroy();
    }
  });

  it('at the limit with every connection busy, requests in flight all complete', async () => {
    const port = proxy.listenerPort('small') as number;
    await waitFor(
      async () =>
        (await fetchText(proxy.adminPort as number, '/metrics')).body.includes(
          'evenlb_proxy_downstream_connections{listener="small"} 0',
        ),
      5000,
      'small listener empty',
    );
    const inFlight = [0, 1, 2, 3].map(() => get(port, false, 'slow.test'));
    await waitFor(() => slow.inFlight === 4, 5000, 'four requests in flight');
    // A fifth connection finds no idle one to close: it is refused, the others are untouched.
    const fifth = await get(port, false).then(
      (s) => s,
      () => 0,
    );
    expect(await Promise.all(inFlight)).toEqual([200, 200, 200, 200]);
    expect([0, 200]).toContain(fifth);
  });

  it.each([
    ['HTTPS', 'tls-small', 'https'],
    ['h2c', 'h2c-small', 'http'],
  ])('%s: an HTTP/2 session with a stream in flight is never closed to make room', async (_, listener, scheme) => {
    const port = proxy.listenerPort(listener) as number;
    const sessions = [0, 1].map(() => {
      const s = http2.connect(`${scheme}://127.0.0.1:${port}`, { rejectUnauthorized: false });
      s.on('error', () => {});
      return s;
    });
    try {
      const inFlight = sessions.map(
        (s) =>
          new Promise<number>((resolve) => {
            const req = s.request({ ':path': '/', ':authority': 'slow.test' });
            let status = 0;
            req.on('response', (h) => {
              status = Number(h[':status']);
            });
            req.on('error', () => resolve(-1));
            req.resume();
            req.on('close', () => resolve(status));
          }),
      );
      await waitFor(() => slow.inFlight >= 2, 5000, 'two streams in flight');
      // A third connection finds no idle one to close: it is refused; the streams are untouched.
      const third = net.connect(port, '127.0.0.1');
      third.on('error', () => {});
      third.resume();
      await closedWithin(third, 5000);
      expect(await Promise.all(inFlight)).toEqual([200, 200]);
    } finally {
      for (const s of sessions) s.destroy();
    }
  });
});
