import { describe, expect, it } from 'vitest';
import { hostPortKey, normalizeHost } from './host.js';

describe('normalizeHost', () => {
  it.each([
    ['Example.COM.:443', 'example.com'],
    ['api.example', 'api.example'],
    ['[::1]:8080', '[::1]'],
    ['[FE80::1]', '[fe80::1]'],
    ['10.0.0.1:80', '10.0.0.1'],
  ])('%s → %s', (host, expected) => expect(normalizeHost(host)).toBe(expected));
});

describe('hostPortKey', () => {
  it.each([
    ['Svc.NS.svc.', 443, 'svc.ns.svc:443'],
    ['svc.ns.svc.cluster.local', 8443, 'svc.ns.svc.cluster.local:8443'],
    ['::1', 80, '[::1]:80'],
    ['[FE80::1]', 80, '[fe80::1]:80'],
    ['10.0.0.1', 9000, '10.0.0.1:9000'],
  ] as const)('%s and %d → %s', (host, port, expected) => expect(hostPortKey(host, port)).toBe(expected));

  it("reads a host the way the proxy's route table does: the client's key is the proxy's host plus the port", () => {
    for (const host of ['API.Example.', 'api.example', '[::1]', 'Svc.NS.svc']) {
      expect(hostPortKey(host, 80)).toBe(`${normalizeHost(host)}:80`);
    }
  });
});
