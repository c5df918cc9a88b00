import { describe, expect, it } from 'vitest';
import { createEndpoint, endpointChanged, endpointKey } from './endpoint.js';
import { ErrorCodes } from './errors.js';

describe('createEndpoint', () => {
  it("applies Kubernetes' condition defaults: ready and serving true, terminating false", () => {
    const e = createEndpoint({ address: '10.0.0.1', port: 8443 });
    expect(e).toEqual({
      address: '10.0.0.1',
      port: 8443,
      weight: 1,
      conditions: { ready: true, serving: true, terminating: false },
      key: '10.0.0.1:8443',
    });
    expect(Object.isFrozen(e)).toBe(true);
    expect(Object.isFrozen(e.conditions)).toBe(true);
  });

  const conditionCases: {
    given: { ready?: boolean | null; serving?: boolean | null; terminating?: boolean | null };
    expected: { ready: boolean; serving: boolean; terminating: boolean };
  }[] = [
    { given: { ready: false }, expected: { ready: false, serving: true, terminating: false } },
    {
      given: { ready: null, serving: null, terminating: null },
      expected: { ready: true, serving: true, terminating: false },
    },
    {
      given: { ready: false, terminating: true },
      expected: { ready: false, serving: true, terminating: true },
    },
    {
      given: { ready: false, serving: false, terminating: true },
      expected: { ready: false, serving: false, terminating: true },
    },
  ];
  it.each(conditionCases)('conditions $given → $expected', ({ given, expected }) => {
    expect(createEndpoint({ address: '10.0.0.1', port: 1, conditions: given }).conditions).toEqual(expected);
  });

  it('keeps optional metadata and freezes the target reference', () => {
    const e = createEndpoint({
      address: '10.0.0.1',
      port: 80,
      weight: 2.5,
      zone: 'eu-west-1a',
      nodeName: 'node-1',
      targetRef: { kind: 'Pod', name: 'web-0', namespace: 'default', uid: 'u1' },
    });
    expect(e).toMatchObject({ weight: 2.5, zone: 'eu-west-1a', nodeName: 'node-1' });
    expect(e.targetRef).toEqual({ kind: 'Pod', name: 'web-0', namespace: 'default', uid: 'u1' });
    expect(Object.isFrozen(e.targetRef)).toBe(true);
    expect('zone' in createEndpoint({ address: '10.0.0.1', port: 80 })).toBe(false);
  });

  const keyCases = [
    { address: '10.0.0.1', port: 80, key: '10.0.0.1:80' },
    { address: '::1', port: 8443, key: '[::1]:8443' },
    { address: 'fd00:10:244::5', port: 443, key: '[fd00:10:244::5]:443' },
    { address: '[::1]', port: 8443, key: '[::1]:8443' },
    { address: 'web.default.svc', port: 80, key: 'web.default.svc:80' },
  ];
  it.each(keyCases)('keys $address port $port as $key', ({ address, port, key }) => {
    expect(createEndpoint({ address, port }).key).toBe(key);
  });

  it('stores a bracketed IPv6 address without brackets', () => {
    // Regression: "[::1]" was kept verbatim, so the key read "[::1]:80" by accident and a
    // connection to the address "[::1]" failed.
    expect(createEndpoint({ address: '[::1]', port: 80 }).address).toBe('::1');
    expect(endpointKey('::1', 80)).toBe('[::1]:80');
  });

  const invalid: { name: string; input: unknown; message: string }[] = [
    { name: 'not an object', input: 'x', message: 'endpoint: "(endpoint)" must be an object; received "x"' },
    {
      name: 'no address',
      input: { port: 80 },
      message: 'endpoint: "address" must be a non-empty string; received undefined',
    },
    {
      name: 'empty address',
      input: { address: '', port: 80 },
      message: '"address" must be a non-empty string; received ""',
    },
    {
      name: 'port 0',
      input: { address: '10.0.0.1', port: 0 },
      message: '"port" must be an integer between 1 and 65535; received 0',
    },
    { name: 'port 65536', input: { address: '10.0.0.1', port: 65536 }, message: 'received 65536' },
    { name: 'port as string', input: { address: '10.0.0.1', port: '80' }, message: 'received "80"' },
    {
      name: 'weight 0',
      input: { address: '10.0.0.1', port: 80, weight: 0 },
      message: '"weight" must be a finite number > 0; received 0',
    },
    { name: 'weight NaN', input: { address: '10.0.0.1', port: 80, weight: Number.NaN }, message: 'received NaN' },
    {
      name: 'condition not boolean',
      input: { address: '10.0.0.1', port: 80, conditions: { ready: 'yes' } },
      message: '"conditions.ready" must be a boolean; received "yes"',
    },
    {
      name: 'empty brackets',
      input: { address: '[]', port: 80 },
      message: '"address" must be an IPv6 address when in brackets',
    },
    { name: 'IPv4 in brackets', input: { address: '[10.0.0.1]', port: 80 }, message: 'received "[10.0.0.1]"' },
  ];
  it.each(invalid)('rejects $name', ({ input, message }) => {
    expect(() => createEndpoint(input as never)).toThrow(
      expect.objectContaining({ code: ErrorCodes.INVALID_OPTION, message: expect.stringContaining(message) }),
    );
  });
});

describe('endpointChanged', () => {
  const base = createEndpoint({ address: '10.0.0.1', port: 80, targetRef: { kind: 'Pod', name: 'a', uid: '1' } });
  const cases: { name: string; change: object; changed: boolean }[] = [
    { name: 'nothing', change: {}, changed: false },
    { name: 'weight', change: { weight: 2 }, changed: true },
    { name: 'zone', change: { zone: 'z' }, changed: true },
    { name: 'node', change: { nodeName: 'n' }, changed: true },
    { name: 'ready', change: { conditions: { ready: false } }, changed: true },
    { name: 'terminating', change: { conditions: { terminating: true } }, changed: true },
    { name: 'pod name', change: { targetRef: { kind: 'Pod', name: 'b', uid: '1' } }, changed: true },
    { name: 'pod uid', change: { targetRef: { kind: 'Pod', name: 'a', uid: '2' } }, changed: true },
  ];
  it.each(cases)('$name → changed: $changed', ({ change, changed }) => {
    const next = createEndpoint({
      address: '10.0.0.1',
      port: 80,
      targetRef: { kind: 'Pod', name: 'a', uid: '1' },
      ...change,
    });
    expect(endpointChanged(base, next)).toBe(changed);
  });
});
