/** Which listening addresses collide, and which hosts this machine can bind (interfaces given). */
import { describe, expect, it } from 'vitest';
import { addressesOverlap, localBindProblem, parseAddress } from './listen-address.js';

const at = (address: string) => {
  const { host, port } = parseAddress(address);
  return { host: host.toLowerCase(), port };
};

describe('addressesOverlap', () => {
  const cases: [string, string, boolean][] = [
    ['127.0.0.1:8080', '127.0.0.1:8080', true],
    ['127.0.0.1:8080', '127.0.0.1:8081', false],
    ['127.0.0.1:8080', '127.0.0.2:8080', false],
    ['0.0.0.0:8080', '127.0.0.1:8080', true],
    ['127.0.0.1:8080', '0.0.0.0:8080', true],
    ['0.0.0.0:8080', '[::1]:8080', false],
    ['[::]:8080', '127.0.0.1:8080', true],
    ['[::]:8080', '[::1]:8080', true],
    ['[0:0:0:0:0:0:0:0]:8080', '10.0.0.1:8080', true],
    ['127.0.0.1:0', '127.0.0.1:0', false],
    ['localhost:8080', 'localhost:8080', true],
    ['localhost:8080', '0.0.0.0:8080', true],
  ];
  for (const [a, b, expected] of cases) {
    it(`${a} and ${b}: ${expected ? 'collide' : 'do not collide'}`, () => {
      expect(addressesOverlap(at(a), at(b))).toBe(expected);
    });
  }
});

describe('localBindProblem', () => {
  const interfaces = {
    lo: [
      { address: '127.0.0.1', family: 'IPv4' },
      { address: '::1', family: 'IPv6' },
    ],
    eth0: [{ address: '10.1.2.3', family: 'IPv4' }],
  } as unknown as Parameters<typeof localBindProblem>[1];
  it('accepts wildcards, loopback, host names and interface addresses', () => {
    for (const host of ['0.0.0.0', '::', '127.0.0.1', '127.9.9.9', '::1', '10.1.2.3', 'localhost'])
      expect(localBindProblem(host, interfaces)).toBeUndefined();
  });
  it('refuses an IP no interface has, listing the ones there are', () => {
    expect(localBindProblem('10.1.2.4', interfaces)).toMatch(/must be an address of this machine.*10\.1\.2\.3/);
  });
});
