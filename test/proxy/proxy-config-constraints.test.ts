/**
 * The cross-field constraints: every configuration that validates field by field but that
 * node:net, node:http or node:tls would refuse (or get wrong) once built is rejected by the
 * validator, naming the field, what it must be and what it is — so nothing starts from it and
 * no reload half-applies it. Real PEM files (made with openssl) for the TLS cases.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { normalizeProxyConfig } from '../../src/proxy/config/proxy-config.js';
import { testCertificates } from '../support/test-certificates.js';

const dir = mkdtempSync(join(tmpdir(), 'evenlb-constraints-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pki = testCertificates('proxy.example', 'constraints');
const other = testCertificates('proxy.example', 'constraints-other');
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}
const cert = file('cert.pem', pki.cert);
const key = file('key.pem', pki.key);
const ca = file('ca.pem', pki.ca);
const otherKey = file('other.key', other.key);
const junk = file('junk.pem', 'not PEM at all\n');
const badBlock = file('bad-block.pem', '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');

const CLUSTERS = [{ name: 'app', target: 'static:///127.0.0.1:1' }];
const https = (tls: Record<string, unknown>) => ({
  listeners: [{ address: '127.0.0.1:0', protocol: 'https', tls }],
  clusters: CLUSTERS,
});

const rejected: { name: string; config: unknown; message: RegExp }[] = [
  {
    name: 'a whole-request deadline below the head deadline (node:http refuses the server)',
    config: { listeners: [{ address: '127.0.0.1:0', limits: { requestTimeoutMs: 5000 } }], clusters: CLUSTERS },
    message:
      /"listeners\[0\]\.limits\.requestTimeoutMs" must be 0 \(no limit\) or at least listeners\[0\]\.limits\.headersTimeoutMs \(10000 ms\).*; received 5000/,
  },
  {
    name: 'the same, with both set',
    config: {
      listeners: [{ address: '127.0.0.1:0', limits: { headersTimeoutMs: 2000, requestTimeoutMs: 1999 } }],
      clusters: CLUSTERS,
    },
    message: /"listeners\[0\]\.limits\.requestTimeoutMs" must be 0 .*\(2000 ms\).*; received 1999/,
  },
  {
    name: 'a duration past Node’s longest timer',
    config: { listeners: [{ address: '127.0.0.1:0', limits: { idleTimeoutMs: 2 ** 31 } }], clusters: CLUSTERS },
    message: /"listeners\[0\]\.limits\.idleTimeoutMs" must be at most 2147483647 ms.*; received 2147483648/,
  },
  {
    name: 'a cluster duration past Node’s longest timer',
    config: {
      listeners: [{ address: '127.0.0.1:0' }],
      clusters: [{ ...CLUSTERS[0], connectTimeoutMs: 3e9 }],
    },
    message: /"clusters\[0\]\.connectTimeoutMs" must be at most 2147483647 ms/,
  },
  {
    name: 'two listeners with one name',
    config: {
      listeners: [
        { name: 'web', address: '127.0.0.1:0' },
        { name: 'web', address: '127.0.0.2:0' },
      ],
      clusters: CLUSTERS,
    },
    message: /"listeners\[1\]\.name" must be unique \(listeners\[0\] is also named "web"\); received "web"/,
  },
  {
    name: 'a listener on the wildcard and one on loopback, same port',
    config: {
      listeners: [{ address: '0.0.0.0:18080' }, { address: '127.0.0.1:18080' }],
      clusters: CLUSTERS,
    },
    message:
      /"listeners\[1\]\.address" must not bind the port of listeners\[0\]\.address \(0\.0\.0\.0:18080\).*; received "127\.0\.0\.1:18080"/,
  },
  {
    name: 'a listener on the admin port',
    config: { admin: { address: '127.0.0.1:9901' }, listeners: [{ address: '[::]:9901' }], clusters: CLUSTERS },
    message: /"listeners\[0\]\.address" must not bind the port of admin\.address \(127\.0\.0\.1:9901\)/,
  },
  {
    name: 'the metrics address on the admin address',
    config: {
      admin: { address: '127.0.0.1:9901', metricsAddress: '127.0.0.1:9901' },
      listeners: [{ address: '127.0.0.1:0' }],
      clusters: CLUSTERS,
    },
    message: /"admin\.metricsAddress" must not bind the port of admin\.address/,
  },
  {
    name: 'the fair-share load port on a listener’s port (all interfaces)',
    config: {
      listeners: [
        { address: '127.0.0.1:18081' },
        {
          address: '127.0.0.1:18082',
          recycle: { fairShare: { peers: 'static:///127.0.0.1:18082', loadPort: 18081 } },
        },
      ],
      clusters: CLUSTERS,
    },
    message:
      /"listeners\[1\]\.recycle\.fairShare\.loadPort" must not bind the port of listeners\[0\]\.address \(127\.0\.0\.1:18081\).*; received "\[::\]:18081"/,
  },
  {
    name: 'fair-share peers that are not a target URI',
    config: {
      listeners: [{ address: '127.0.0.1:0', recycle: { fairShare: { peers: 'http://peers', loadPort: 18083 } } }],
      clusters: CLUSTERS,
    },
    message: /"listeners\[0\]\.recycle\.fairShare\.peers" is not a valid target URI/,
  },
  {
    name: 'an IP this machine does not have',
    config: { listeners: [{ address: '192.0.2.77:8080' }], clusters: CLUSTERS },
    message: /"listeners\[0\]\.address" must be an address of this machine.*; received "192\.0\.2\.77:8080"/,
  },
  {
    name: 'request recycling on a tcp listener',
    config: {
      listeners: [
        { address: '127.0.0.1:0', protocol: 'tcp', cluster: 'app', recycle: { maxRequestsPerConnection: 5 } },
      ],
      clusters: CLUSTERS,
    },
    message:
      /"listeners\[0\]\.recycle\.maxRequestsPerConnection" is only valid for protocol "http" or "https".*; received 5/,
  },
  {
    name: 'a certificate file that is not PEM',
    config: https({ cert: junk, key }),
    message:
      /"listeners\[0\]\.tls\.cert" must hold a PEM certificate \(no CERTIFICATE block found\); received ".*junk\.pem"/,
  },
  {
    name: 'a certificate block that does not parse',
    config: https({ cert: badBlock, key }),
    message: /"listeners\[0\]\.tls\.cert" must hold a PEM certificate \(.+\); received ".*bad-block\.pem"/,
  },
  {
    name: 'a key file that is not a key',
    config: https({ cert, key: cert }),
    message: /"listeners\[0\]\.tls\.key" must hold an unencrypted PEM private key/,
  },
  {
    name: 'a key of another certificate',
    config: https({ cert, key: otherKey }),
    message:
      /"listeners\[0\]\.tls\.key" must be the private key of listeners\[0\]\.tls\.cert .*; received ".*other\.key"/,
  },
  {
    name: 'an SNI entry whose key does not match',
    config: https({ cert, key, sni: [{ serverNames: ['a.example'], cert, key: otherKey }] }),
    message: /"listeners\[0\]\.tls\.sni\[0\]\.key" must be the private key of listeners\[0\]\.tls\.sni\[0\]\.cert/,
  },
  {
    name: 'a client CA that is not PEM',
    config: https({ cert, key, clientCa: junk }),
    message: /"listeners\[0\]\.tls\.clientCa" must hold PEM CA certificates/,
  },
  {
    name: 'a cluster CA that is not PEM',
    config: { listeners: [{ address: '127.0.0.1:0' }], clusters: [{ ...CLUSTERS[0], tls: { ca: junk } }] },
    message: /"clusters\[0\]\.tls\.ca" must hold PEM CA certificates/,
  },
];

describe('cross-field constraints', () => {
  for (const c of rejected) {
    it(`rejects ${c.name}, naming the field`, () => {
      expect(() => normalizeProxyConfig(c.config)).toThrow(c.message);
    });
  }

  it('accepts what fits together: ordered deadlines, no deadline, distinct ports, matching PEM files', () => {
    expect(() =>
      normalizeProxyConfig({
        admin: { address: '127.0.0.1:9901', metricsAddress: '127.0.0.1:9902' },
        listeners: [
          { name: 'web', address: '127.0.0.1:18090', limits: { headersTimeoutMs: 2000, requestTimeoutMs: 2000 } },
          { name: 'long', address: '127.0.0.2:18090', limits: { requestTimeoutMs: 0 } },
          {
            name: 'tls',
            address: '[::1]:18091',
            protocol: 'https',
            tls: { cert, key, clientCa: ca, sni: [{ serverNames: ['*.example'], cert, key }] },
          },
          { name: 'tcp', address: '127.0.0.1:0', protocol: 'tcp', cluster: 'app', limits: { requestTimeoutMs: 1 } },
          {
            name: 'shed',
            address: '127.0.0.1:18092',
            recycle: { fairShare: { peers: 'static:///127.0.0.1:18092', loadPort: 18093, loadHost: '127.0.0.1' } },
          },
        ],
        clusters: [{ ...CLUSTERS[0], tls: { ca } }],
      }),
    ).not.toThrow();
  });
});
