/**
 * Clusters reached over TLS (`clusters[].tls`): requests are balanced per request over
 * keep-alive TLS sockets verified against the configured server name — or the request's host
 * when none is configured — never the endpoint's IP; an untrusted or mismatched certificate
 * gets 502 and nothing reaches the endpoint. Real HTTPS backends with a throwaway CA.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { testCertificates } from '../support/test-certificates.js';
import { startProxy } from './helpers.js';

interface TlsBackend {
  readonly name: string;
  readonly key: string;
  hits: number;
  tlsSessions: number;
  servernames: Set<string>;
  bodies: number[];
  readonly server: https.Server;
}

const pki = testCertificates('backend.internal', 'upstream-tls');
const stranger = testCertificates('backend.internal', 'upstream-tls-stranger');
let dir: string;
let backends: TlsBackend[] = [];
let proxy: ProxyServer;
let port = 0;

async function startTlsBackend(name: string, address: string): Promise<TlsBackend> {
  const server = https.createServer({ key: pki.key, cert: pki.cert });
  const b: TlsBackend = { name, key: '', hits: 0, tlsSessions: 0, servernames: new Set(), bodies: [], server };
  server.on('secureConnection', (socket: TLSSocket) => {
    b.tlsSessions++;
    const sni = (socket as TLSSocket & { servername?: string | false }).servername;
    b.servernames.add(typeof sni === 'string' ? sni : '(none)');
  });
  server.on('request', (req, res) => {
    b.hits++;
    let bytes = 0;
    req.on('data', (c: Buffer) => {
      bytes += c.length;
    });
    req.on('end', () => {
      b.bodies.push(bytes);
      const body = `${name} ${bytes}`;
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  return Object.assign(b, { key: `${address}:${(server.address() as AddressInfo).port}` });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'evenlb-upstream-tls-'));
  const ca = join(dir, 'ca.crt');
  const wrongCa = join(dir, 'wrong-ca.crt');
  writeFileSync(ca, pki.ca);
  writeFileSync(wrongCa, stranger.ca);
  backends = await Promise.all([startTlsBackend('u1', '127.0.0.196'), startTlsBackend('u2', '127.0.0.197')]);
  const target = `static:///${backends.map((b) => b.key).join(',')}`;
  proxy = await startProxy({
    listeners: [{ name: 'web', address: '127.0.0.1:0' }],
    clusters: [
      { name: 'named', target, policy: 'round-robin', tls: { ca, servername: 'backend.internal' } },
      { name: 'by-host', target, policy: 'round-robin', tls: { ca } },
      { name: 'untrusted', target, tls: { ca: wrongCa, servername: 'backend.internal' }, retries: { idempotent: 0 } },
      { name: 'mismatch', target, tls: { ca, servername: 'other.internal' }, retries: { idempotent: 0 } },
    ],
    routes: [
      { hosts: ['named.test'], cluster: 'named' },
      { hosts: ['backend.internal'], cluster: 'by-host' },
      { hosts: ['untrusted.test'], cluster: 'untrusted' },
      { hosts: ['mismatch.test'], cluster: 'mismatch' },
    ],
  });
  port = proxy.listenerPort('web') as number;
});

afterAll(async () => {
  agent.destroy();
  await proxy?.close();
  for (const b of backends) {
    b.server.closeAllConnections();
    await new Promise<void>((resolve) => b.server.close(() => resolve()));
  }
  rmSync(dir, { recursive: true, force: true });
});

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly reason: string | undefined;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function request(host: string, method = 'GET', body?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: '/tls',
        agent,
        headers: { host, ...(body === undefined ? {} : { 'content-length': body.length }) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: text,
            reason: res.headers['x-evenlb-reason'] as string | undefined,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('clusters reached over TLS', () => {
  it('balances per request over reused TLS sockets verified for the configured server name', async () => {
    const before = backends.map((b) => b.hits);
    const sessionsBefore = backends.reduce((n, b) => n + b.tlsSessions, 0);
    for (let i = 0; i < 20; i++) {
      const a = await request('named.test');
      expect(a.status).toBe(200);
    }
    expect(backends.map((b, i) => b.hits - (before[i] as number))).toEqual([10, 10]);
    // Keep-alive upstream: a handful of TLS handshakes, not one per request.
    expect(backends.reduce((n, b) => n + b.tlsSessions, 0) - sessionsBefore).toBeLessThanOrEqual(4);
    for (const b of backends) expect(b.servernames).toContain('backend.internal');
    // A body goes through as well.
    const posted = await request('named.test', 'POST', Buffer.alloc(100_000, 7));
    expect(posted.status).toBe(200);
    expect(posted.body).toMatch(/^u[12] 100000$/);
  });

  it("uses the request's host as the server name when none is configured", async () => {
    const a = await request('backend.internal');
    expect(a.status).toBe(200);
    expect(a.body).toMatch(/^u[12] 0$/);
  });

  it('answers 502 and reaches no endpoint when the certificate is untrusted or names another host', async () => {
    const hits = backends.reduce((n, b) => n + b.hits, 0);
    for (const host of ['untrusted.test', 'mismatch.test']) {
      const a = await request(host);
      expect(a.status, host).toBe(502);
      expect(a.reason).toBe('upstream-error');
    }
    expect(backends.reduce((n, b) => n + b.hits, 0)).toBe(hits);
  });
});
