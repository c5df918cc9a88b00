import { describe, expect, it } from 'vitest';
import { endpointChainName, renderKubeProxyRules, ruleProbability, serviceChainName } from './kube-proxy-rules.js';

describe('kube-proxy rule rendering', () => {
  it("names chains with kube-proxy's hash (values from kube-proxy's own tests)", () => {
    expect(serviceChainName('ns1/svc1:p80')).toBe('KUBE-SVC-XPGD46QRK7WJZT7O');
    expect(endpointChainName('ns1/svc1:p80', { address: '10.180.0.1', port: 80 })).toBe('KUBE-SEP-SXIVWICOYRO3J4NJ');
  });

  const cases = [
    { n: 1, probabilities: [] },
    { n: 2, probabilities: ['0.5000000000'] },
    { n: 3, probabilities: ['0.3333333333', '0.5000000000'] },
    { n: 4, probabilities: ['0.2500000000', '0.3333333333', '0.5000000000'] },
  ];
  for (const c of cases) {
    it(`${c.n} endpoint(s): probabilities 1/(N-i), the last rule unconditional`, () => {
      expect(Array.from({ length: c.n - 1 }, (_, i) => ruleProbability(i, c.n))).toEqual(c.probabilities);
      const endpoints = Array.from({ length: c.n }, (_, i) => ({ address: `127.0.1.${c.n - i}`, port: 8080 }));
      const rules = renderKubeProxyRules({
        servicePortName: 'default/web:http',
        clusterIp: '127.100.0.1',
        port: 80,
        endpoints,
      });
      const svcRules = rules.text.split('\n').filter((l) => l.startsWith(`-A ${rules.serviceChain} `));
      expect(svcRules).toHaveLength(c.n);
      expect(svcRules.map((l) => /--probability (\S+)/.exec(l)?.[1])).toEqual([...c.probabilities, undefined]);
      // Sorted by "ip:port" as kube-proxy does.
      expect(rules.endpoints.map((e) => e.address)).toEqual(endpoints.map((e) => e.address).sort());
      expect(rules.text).toContain(`-A KUBE-SERVICES -d 127.100.0.1/32 -p tcp`);
      expect(rules.text.match(/-j DNAT --to-destination 127\.0\.1\.\d+:8080/g)).toHaveLength(c.n);
    });
  }

  it('sorts by the "ip:port" string, de-duplicates, and deletes chains of removed endpoints', () => {
    const first = renderKubeProxyRules({
      servicePortName: 'default/web:http',
      clusterIp: '127.100.0.1',
      port: 80,
      endpoints: [
        { address: '127.0.1.2', port: 8080 },
        { address: '127.0.1.10', port: 8080 },
        { address: '127.0.1.2', port: 8080 },
      ],
    });
    expect(first.endpoints.map((e) => e.address)).toEqual(['127.0.1.10', '127.0.1.2']);
    const second = renderKubeProxyRules({
      servicePortName: 'default/web:http',
      clusterIp: '127.100.0.1',
      port: 80,
      endpoints: [{ address: '127.0.1.2', port: 8080 }],
      previousEndpointChains: first.endpointChains,
    });
    expect(second.text).toContain(`-X ${first.endpointChains[0]}`);
    expect(second.text).not.toContain(`-X ${first.endpointChains[1]}`);
  });

  it('zero endpoints: no service rule (connections to the VIP are refused)', () => {
    const rules = renderKubeProxyRules({ servicePortName: 'd/w:h', clusterIp: '127.100.0.1', port: 80, endpoints: [] });
    expect(rules.text).not.toContain('-A KUBE-SERVICES');
    expect(rules.endpointChains).toEqual([]);
  });
});
