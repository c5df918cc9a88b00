/**
 * An `https` listener (TLS with ALPN `h2` and `http/1.1` on one port) and downstream
 * connection recycling through the server-side recycler: a keep-alive client connection is
 * closed after `maxRequestsPerConnection` responses and the client reconnects.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { testCertificates } from '../support/test-certificates.js';
import { type Backend, startBackend, startProxy } from './helpers.js';

let dir = '';
let backends: Backend[] = [];
let proxy: ProxyServer;
let ca = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'evenlb-proxy-tls-'));
  const pki = testCertificates('proxy.evenlb.test');
  ca = pki.ca;
  writeFileSync(join(dir, 'cert.pem'), pki.cert);
  writeFileSync(join(dir, 'key.pem'), pki.key);
  backends = await Promise.all([1, 2].map((i) => startBackend(`s${i}`, `127.0.0.${110 + i}`)));
  proxy = await startProxy({
    listeners: [
      {
        name: 'tls',
        address: '127.0.0.1:0',
        protocol: 'https',
        tls: { cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') },
      },
      { name: 'recycled', address: '127.0.0.1:0', recycle: { maxRequestsPerConnection: 3 } },
    ],
    clusters: [{ name: 'web', target: `static:///${backends.map((b) => b.key).join(',')}`, policy: 'round-robin' }],
  });
});

afterAll(async () => {
  await proxy?.close();
  await Promise.all(backends.map((b) => b.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe('https listener', () => {
  it('serves HTTP/1.1 over TLS (ALPN http/1.1) and sets X-Forwarded-Proto https', async () => {
    const agent = new https.Agent({
      ca,
      servername: 'proxy.evenlb.test',
      keepAlive: true,
      ALPNProtocols: ['http/1.1'],
    });
    const res = await new Promise<{ status: number; alpn: string | false | null }>((resolve, reject) => {
      https
        .get(
          { host: '127.0.0.1', port: proxy.listenerPort('tls'), path: '/', agent, headers: { host: 'svc.example' } },
          (r) => {
            const alpn = (r.socket as import('node:tls').TLSSocket).alpnProtocol;
            r.resume();
            r.on('end', () => resolve({ status: r.statusCode ?? 0, alpn }));
          },
        )
        .on('error', reject);
    });
    agent.destroy();
    expect(res.status).toBe(200);
    expect(res.alpn).toBe('http/1.1');
    const seen = backends.map((b) => b.lastHeaders).find((h) => h !== undefined);
    expect(seen?.['x-forwarded-proto']).toBe('https');
  });

  it('serves HTTP/2 over TLS (ALPN h2) and balances its streams', async () => {
    for (const b of backends) b.hits = 0;
    const session = http2.connect(`https://127.0.0.1:${proxy.listenerPort('tls')}`, {
      ca,
      servername: 'proxy.evenlb.test',
    });
    const one = (): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = session.request({ ':path': '/', ':authority': 'svc.example' });
        let status = 0;
        req.on('response', (h) => (status = Number(h[':status'])));
        req.resume();
        req.on('end', () => resolve(status));
        req.on('error', reject);
        req.end();
      });
    const statuses = await Promise.all(Array.from({ length: 40 }, one));
    expect(session.alpnProtocol).toBe('h2');
    session.close();
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(backends.map((b) => b.hits)).toEqual([20, 20]);
  });
});

describe('downstream recycling', () => {
  it('closes a keep-alive client connection after maxRequestsPerConnection and the client reconnects', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const ports: number[] = [];
    const closes: string[] = [];
    for (let i = 0; i < 9; i++) {
      await new Promise<void>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port: proxy.listenerPort('recycled'), path: '/', agent }, (r) => {
            ports.push(r.socket.localPort as number);
            closes.push(String(r.headers.connection));
            r.resume();
            r.on('end', resolve);
          })
          .on('error', reject);
      });
    }
    agent.destroy();
    expect(new Set(ports).size).toBe(3);
    expect(closes.filter((c) => c === 'close')).toHaveLength(3);
  });
});
