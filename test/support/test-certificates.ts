/**
 * Test PKI: a throwaway CA and a leaf certificate (usable by servers and clients) for a DNS
 * name only (no IP SAN), generated at test time with the `openssl` CLI, so TLS tests prove that
 * verification follows the Service name and never the endpoint IP. Results are cached per process and name.
 *
 * @example
 * const pki = testCertificates('test-service.default.svc');
 * https.createServer({ key: pki.key, cert: pki.cert }, handler);
 * new BalancedAgent({ tls: { ca: pki.ca } });
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCertificates {
  /** The CA certificate (PEM) to trust. */
  readonly ca: string;
  /** The leaf certificate (PEM), SAN `DNS:<name>` only. */
  readonly cert: string;
  /** The leaf's private key (PEM). */
  readonly key: string;
}

const cache = new Map<string, TestCertificates>();

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A CA and a leaf for `dnsName`, valid for a day. `label` gives an independent CA. */
export function testCertificates(dnsName: string, label = 'default'): TestCertificates {
  const cacheKey = `${label}\0${dnsName}`;
  const hit = cache.get(cacheKey);
  if (hit !== undefined) return hit;
  const dir = mkdtempSync(join(tmpdir(), 'evenlb-pki-'));
  try {
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    openssl(dir, [
      'req',
      '-x509',
      ...ec,
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '1',
      '-subj',
      `/CN=evenlb test CA ${label}`,
    ]);
    openssl(dir, ['req', ...ec, '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', `/CN=${dnsName}`]);
    writeFileSync(join(dir, 'ext.cnf'), `subjectAltName=DNS:${dnsName}\nextendedKeyUsage=serverAuth,clientAuth\n`);
    openssl(dir, [
      'x509',
      '-req',
      '-in',
      'leaf.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'leaf.crt',
      '-days',
      '1',
      '-extfile',
      'ext.cnf',
    ]);
    const pki: TestCertificates = {
      ca: readFileSync(join(dir, 'ca.crt'), 'utf8'),
      cert: readFileSync(join(dir, 'leaf.crt'), 'utf8'),
      key: readFileSync(join(dir, 'leaf.key'), 'utf8'),
    };
    cache.set(cacheKey, pki);
    return pki;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
