/**
 * `https` listeners with several certificates and with client certificates: the certificate
 * follows the TLS server name (exact names, then one-label `*.suffix` wildcards, else the
 * default), a listener with `clientCa` refuses clients without a certificate from that CA and
 * tells the backend who a verified client is (`X-Forwarded-Client-Cert`), and
 * a reload with rotated certificate files serves the new certificate to new connections while
 * open ones keep working. Real TLS with throwaway CAs from the `openssl` CLI.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeProxyConfig } from '../../src/proxy/config/proxy-config.js';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { type TestCertificates, testCertificates } from '../support/test-certificates.js';
import { type Backend, startBackend, startProxy } from './helpers.js';

let dir: string;
let backend: Backend;
let proxy: ProxyServer;
let config: Record<string, unknown>;
const pki: Record<string, TestCertificates> = {};

function files(name: string, certs: TestCertificates): { cert: string; key: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  writeFileSync(cert, certs.cert);
  writeFileSync(key, certs.key);
  return { cert, key };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'evenlb-sni-'));
  pki.fallback = testCertificates('default.example', 'sni-default');
  pki.a = testCertificates('a.example', 'sni-a');
  pki.wild = testCertificates('*.wild.example', 'sni-wild');
  pki.client = testCertificates('client.example', 'sni-client');
  pki.stranger = testCertificates('client.example', 'sni-stranger');
  pki.rotated = testCertificates('default.example', 'sni-rotated');
  const clientCa = join(dir, 'client-ca.crt');
  writeFileSync(clientCa, pki.client.ca);
  backend = await startBackend('s1', '127.0.0.195');
  config = {
    listeners: [
      {
        name: 'sni',
        address: '127.0.0.1:0',
        protocol: 'https',
        tls: {
          ...files('default', pki.fallback),
          sni: [
            { serverNames: ['a.example'], ...files('a', pki.a) },
            { serverNames: ['*.wild.example'], ...files('wild', pki.wild) },
          ],
        },
      },
      {
        name: 'mtls',
        address: '127.0.0.1:0',
        protocol: 'https',
        tls: { ...files('mtls', pki.fallback), clientCa },
      },
    ],
    clusters: [{ name: 'web', target: `static:///${backend.key}` }],
  };
  proxy = await startProxy(config);
});

afterAll(async () => {
  await proxy?.close();
  await backend?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Handshake {
  readonly ok: boolean;
  readonly error?: string;
  readonly socket?: tls.TLSSocket;
}

function handshake(listener: string, servername: string, ca: string, client?: TestCertificates): Promise<Handshake> {
  return new Promise((resolve) => {
    const socket = tls.connect({
      host: '127.0.0.1',
      port: proxy.listenerPort(listener) as number,
      servername,
      ca,
      ALPNProtocols: ['http/1.1'],
      ...(client === undefined ? {} : { cert: client.cert, key: client.key }),
    });
    socket.once('secureConnect', () => resolve({ ok: true, socket }));
    socket.once('error', (err) => resolve({ ok: false, error: (err as NodeJS.ErrnoException).code ?? err.message }));
  });
}

/** One GET over an established TLS socket; resolves with the status line. */
function get(socket: tls.TLSSocket, host: string, extra = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`no answer: ${JSON.stringify(text)}`)), 5000);
    const onData = (c: Buffer): void => {
      text += c.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const m = /content-length: *(\d+)/i.exec(text);
      const complete = m === null ? text.endsWith('\r\n0\r\n\r\n') : text.length >= end + 4 + Number(m[1]);
      if (end >= 0 && complete) {
        clearTimeout(timer);
        socket.off('data', onData);
        resolve(text.slice(0, text.indexOf('\r\n')));
      }
    };
    socket.on('data', onData);
    socket.on('error', reject);
    socket.once('close', () => reject(new Error(`closed: ${JSON.stringify(text)}`)));
    socket.write(`GET /tls HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`);
  });
}

/** Closes a handshake's socket and resolves once it is gone. */
function done(h: Handshake): Promise<void> {
  return new Promise((resolve) => {
    if (h.socket === undefined || h.socket.destroyed) return resolve();
    h.socket.once('close', () => resolve());
    h.socket.destroy();
  });
}

describe('https listener certificates', () => {
  it('serves the certificate of the TLS server name: exact, one-label wildcard, else the default', async () => {
    const cases: [string, TestCertificates][] = [
      ['a.example', pki.a as TestCertificates],
      ['x.wild.example', pki.wild as TestCertificates],
      ['default.example', pki.fallback as TestCertificates],
    ];
    for (const [name, certs] of cases) {
      const h = await handshake('sni', name, certs.ca);
      expect(h, name).toMatchObject({ ok: true });
      expect(await get(h.socket as tls.TLSSocket, name)).toBe('HTTP/1.1 200 OK');
      await done(h);
    }
    // A wildcard covers one label only; a name nobody configured gets the default certificate.
    for (const name of ['deep.x.wild.example', 'other.example']) {
      const viaDefault = await handshake('sni', name, (pki.fallback as TestCertificates).ca);
      expect(viaDefault.ok, name).toBe(false); // the default certificate names default.example only
      expect(viaDefault.error).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
      const wrongCa = await handshake('sni', name, (pki.wild as TestCertificates).ca);
      expect(wrongCa.ok).toBe(false);
    }
  });

  it('requires a client certificate from clientCa when configured', async () => {
    const ca = (pki.fallback as TestCertificates).ca;
    const trusted = await handshake('mtls', 'default.example', ca, pki.client);
    expect(trusted.ok).toBe(true);
    // The backend learns the verified client; a header the client sends itself is dropped.
    const forged = 'x-forwarded-client-cert: Subject="CN=admin"\r\n';
    expect(await get(trusted.socket as tls.TLSSocket, 'default.example', forged)).toBe('HTTP/1.1 200 OK');
    const xfcc = String(backend.lastHeaders?.['x-forwarded-client-cert']);
    expect(xfcc).toMatch(/^Hash=[0-9a-f]{64};Subject="CN=client\.example";DNS=client\.example$/);
    await done(trusted);
    // Without mutual TLS, a client-sent header never reaches the backend.
    const plain = await handshake('sni', 'default.example', (pki.fallback as TestCertificates).ca);
    expect(await get(plain.socket as tls.TLSSocket, 'default.example', forged)).toBe('HTTP/1.1 200 OK');
    expect(backend.lastHeaders?.['x-forwarded-client-cert']).toBeUndefined();
    await done(plain);
    for (const client of [undefined, pki.stranger]) {
      // TLS 1.3 reports a refused client certificate after the handshake: on the first read.
      const h = await handshake('mtls', 'default.example', ca, client);
      if (h.ok) {
        await expect(get(h.socket as tls.TLSSocket, 'default.example')).rejects.toThrow();
        await done(h);
      } else {
        expect(h.error).toBeDefined();
      }
    }
  });

  it('serves rotated certificate files after a reload; open connections keep working', async () => {
    const before = await handshake('sni', 'default.example', (pki.fallback as TestCertificates).ca);
    expect(before.ok).toBe(true);
    const rotated = pki.rotated as TestCertificates;
    files('default', rotated);
    await proxy.reload(normalizeProxyConfig(config));
    const after = await handshake('sni', 'default.example', rotated.ca);
    expect(after.ok).toBe(true);
    const oldCa = await handshake('sni', 'default.example', (pki.fallback as TestCertificates).ca);
    expect(oldCa.ok).toBe(false);
    // The connection opened before the rotation still carries requests.
    expect(await get(before.socket as tls.TLSSocket, 'default.example')).toBe('HTTP/1.1 200 OK');
    await Promise.all([done(before), done(after)]);
  });

  it('keeps the running certificates when a reload finds a broken file', async () => {
    // Checked with the file (the validator names the field) ...
    writeFileSync(join(dir, 'a.crt'), 'not a certificate');
    expect(() => normalizeProxyConfig(config)).toThrow(
      /"listeners\[0\]\.tls\.sni\[0\]\.cert" must hold a PEM certificate/,
    );
    // ... and broken between validation and the reload: the reload fails, nothing changes.
    files('a', pki.a as TestCertificates);
    const validated = normalizeProxyConfig(config);
    writeFileSync(join(dir, 'a.crt'), 'not a certificate');
    await expect(proxy.reload(validated)).rejects.toThrow();
    const h = await handshake('sni', 'a.example', (pki.a as TestCertificates).ca);
    expect(h.ok).toBe(true);
    await done(h);
    files('a', pki.a as TestCertificates);
  });
});
