/**
 * Test support: real servers and TLS material on loopback. `selfSignedCert` shells out to the
 * `openssl` CLI for a short-lived P-256 certificate whose subjectAltName covers the names and
 * addresses given; the certificate is its own CA, so clients pass it as `ca`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TlsMaterial {
  readonly key: string;
  readonly cert: string;
}

/**
 * A self-signed certificate for `dnsNames` and `ips` (default `localhost`, 127.0.0.1), with
 * subject CN `commonName` (default: the first name or address).
 */
export function selfSignedCert(
  dnsNames: readonly string[] = ['localhost'],
  ips: readonly string[] = ['127.0.0.1'],
  commonName?: string,
) {
  const dir = mkdtempSync(join(tmpdir(), 'evenlb-cert-'));
  try {
    const san = [...dnsNames.map((d) => `DNS:${d}`), ...ips.map((i) => `IP:${i}`)].join(',');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '2',
        '-subj',
        `/CN=${commonName ?? dnsNames[0] ?? ips[0] ?? 'evenlb-test'}`,
        '-addext',
        `subjectAltName=${san}`,
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    return {
      key: readFileSync(join(dir, 'key.pem'), 'utf8'),
      cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    } satisfies TlsMaterial;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Listens on `host` with an ephemeral port; resolves with the port. */
export async function listen(server: net.Server, host = '127.0.0.1'): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  return address.port;
}

/** `GET /` from 127.0.0.1:`port` with node's http client through `agent`; resolves with the body. */
export function httpGetText(port: number, agent: http.Agent): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve(body));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

/** Closes `server` and destroys whatever connections are left (test teardown). */
export async function shutdown(server: net.Server): Promise<void> {
  (server as { closeAllConnections?: () => void }).closeAllConnections?.();
  await new Promise<void>((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    (server as { closeAllConnections?: () => void }).closeAllConnections?.();
  });
}

/** Counts requests per connection object (socket or session), in first-seen order. */
export class PerConnectionCounter<K extends object = object> {
  readonly #counts = new Map<K, number>();

  add(connection: K): void {
    this.#counts.set(connection, (this.#counts.get(connection) ?? 0) + 1);
  }

  /** Counts in the order the connections were first seen. */
  counts(): number[] {
    return [...this.#counts.values()];
  }

  get total(): number {
    return this.counts().reduce((a, b) => a + b, 0);
  }
}

/** Polls `predicate` until it holds or `timeoutMs` passes (event deadline, not a speed check). */
export async function waitFor(predicate: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
