import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../core/errors.js';
import { resolveServiceEndpoints } from './endpoint-slice-resolver.js';
import type { EndpointSlice, Service } from './kube-objects.js';

function svc(ports: Service['spec']['ports']): Service {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'ns' }, spec: { ports } };
}

function slice(name: string, partial: Partial<EndpointSlice>): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace: 'ns', labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4',
    endpoints: [],
    ports: [],
    ...partial,
  };
}

const keysOf = (r: ReturnType<typeof resolveServiceEndpoints>): string[] =>
  r.type === 'endpoints' ? r.endpoints.endpoints.map((e) => e.key) : [`not-found: ${r.error.message}`];

const twoPorts = svc([
  { name: 'https', port: 443, targetPort: 8443 },
  { name: 'metrics', port: 9090, targetPort: 'metrics' },
]);
const sliceA = slice('a', {
  endpoints: [{ addresses: ['10.0.0.1'] }, { addresses: ['10.0.0.2', '10.0.0.99'] }],
  ports: [
    { name: 'https', port: 8443, protocol: 'TCP' },
    { name: 'metrics', port: 9100, protocol: 'TCP' },
  ],
});

describe('resolveServiceEndpoints', () => {
  const cases: {
    name: string;
    service: Service | null;
    slices: EndpointSlice[];
    port: number | string;
    want: string[];
  }[] = [
    {
      name: 'port number → name → slice port',
      service: twoPorts,
      slices: [sliceA],
      port: 443,
      want: ['10.0.0.1:8443', '10.0.0.2:8443'],
    },
    {
      name: 'port name',
      service: twoPorts,
      slices: [sliceA],
      port: 'metrics',
      want: ['10.0.0.1:9100', '10.0.0.2:9100'],
    },
    {
      name: 'unnamed single port',
      service: svc([{ port: 80, targetPort: 8080 }]),
      slices: [slice('u', { endpoints: [{ addresses: ['10.0.0.3'] }], ports: [{ port: 8080 }] })],
      port: 80,
      want: ['10.0.0.3:8080'],
    },
    {
      name: 'TCP preferred when a number is declared for TCP and UDP',
      service: svc([
        { name: 'dns', port: 53, protocol: 'UDP' },
        { name: 'dns-tcp', port: 53, protocol: 'TCP' },
      ]),
      slices: [
        slice('d', {
          endpoints: [{ addresses: ['10.0.0.10'] }],
          ports: [
            { name: 'dns', port: 53, protocol: 'UDP' },
            { name: 'dns-tcp', port: 5353, protocol: 'TCP' },
          ],
        }),
      ],
      port: 53,
      want: ['10.0.0.10:5353'],
    },
    {
      name: 'a slice without the port contributes nothing',
      service: twoPorts,
      slices: [sliceA, slice('b', { endpoints: [{ addresses: ['10.0.0.4'] }], ports: [{ name: 'other', port: 1 }] })],
      port: 'https',
      want: ['10.0.0.1:8443', '10.0.0.2:8443'],
    },
    {
      name: 'addresses not of the slice type and malformed endpoints are skipped',
      service: twoPorts,
      slices: [
        slice('c', {
          endpoints: [
            { addresses: ['fd00::1'] },
            { addresses: [] },
            null as never,
            { addresses: ['10.0.0.5'], conditions: { ready: 'yes' as never } },
          ],
          ports: [{ name: 'https', port: 8443 }],
        }),
      ],
      port: 443,
      want: ['10.0.0.5:8443'],
    },
    {
      name: 'IPv6 slices',
      service: twoPorts,
      slices: [
        slice('v6', {
          addressType: 'IPv6',
          endpoints: [{ addresses: ['fd00::1'] }],
          ports: [{ name: 'https', port: 8443 }],
        }),
      ],
      port: 443,
      want: ['[fd00::1]:8443'],
    },
    {
      name: 'slice with null endpoints or ports',
      service: twoPorts,
      slices: [slice('n', { endpoints: null, ports: null })],
      port: 443,
      want: [],
    },
    {
      name: 'no Service',
      service: null,
      slices: [sliceA],
      port: 443,
      want: ['not-found: Service ns/web does not exist'],
    },
    {
      name: 'no such port number',
      service: twoPorts,
      slices: [sliceA],
      port: 80,
      want: ['not-found: Service ns/web has no port 80; its ports are 443 (https), 9090 (metrics)'],
    },
    {
      name: 'no such port name',
      service: svc([]),
      slices: [sliceA],
      port: 'https',
      want: ['not-found: Service ns/web has no port named "https"; it declares no ports'],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(
        keysOf(
          resolveServiceEndpoints({ namespace: 'ns', name: 'web', service: c.service, slices: c.slices, port: c.port }),
        ),
      ).toEqual(c.want);
    });
  }

  it('keeps the first slice (by name) for an address listed twice, and reports FQDN slices', () => {
    const r = resolveServiceEndpoints({
      namespace: 'ns',
      name: 'web',
      service: twoPorts,
      port: 443,
      slices: [
        slice('z', {
          endpoints: [{ addresses: ['10.0.0.1'], conditions: { ready: false } }],
          ports: [{ name: 'https', port: 8443 }],
        }),
        slice('a', {
          endpoints: [{ addresses: ['10.0.0.1'], conditions: { ready: true } }],
          ports: [{ name: 'https', port: 8443 }],
        }),
        slice('f', {
          addressType: 'FQDN',
          endpoints: [{ addresses: ['a.example'] }],
          ports: [{ name: 'https', port: 8443 }],
        }),
      ],
    });
    if (r.type !== 'endpoints') throw new Error(r.error.message);
    expect(r.endpoints.get('10.0.0.1:8443')?.conditions.ready).toBe(true);
    expect(r.skippedFqdnSlices).toEqual(['f']);
  });

  it('applies condition defaults and keeps metadata', () => {
    const r = resolveServiceEndpoints({
      namespace: 'ns',
      name: 'web',
      service: twoPorts,
      port: 'https',
      slices: [
        slice('a', {
          endpoints: [
            {
              addresses: ['10.0.0.1'],
              zone: 'z1',
              nodeName: 'n1',
              targetRef: { kind: 'Pod', name: 'web-0', namespace: 'ns', uid: 'u' },
            },
            { addresses: ['10.0.0.2'], conditions: { ready: false, serving: true, terminating: true } },
          ],
          ports: [{ name: 'https', port: 8443 }],
        }),
      ],
    });
    if (r.type !== 'endpoints') throw new Error(r.error.message);
    const [a, b] = r.endpoints.endpoints;
    expect(a).toMatchObject({
      conditions: { ready: true, serving: true, terminating: false },
      zone: 'z1',
      nodeName: 'n1',
      targetRef: { kind: 'Pod', name: 'web-0', namespace: 'ns', uid: 'u' },
    });
    expect(b?.conditions).toEqual({ ready: false, serving: true, terminating: true });
  });

  it('reads zone hints (hints.forZones) and the Service trafficDistribution', () => {
    const service = { ...twoPorts, spec: { ...twoPorts.spec, trafficDistribution: 'PreferSameZone' } };
    const r = resolveServiceEndpoints({
      namespace: 'ns',
      name: 'web',
      service,
      port: 'https',
      slices: [
        slice('a', {
          endpoints: [
            { addresses: ['10.0.0.1'], zone: 'z1', hints: { forZones: [{ name: 'z1' }, { name: 'z2' }] } },
            { addresses: ['10.0.0.2'], zone: 'z2', hints: { forZones: [{}] } },
          ],
          ports: [{ name: 'https', port: 8443 }],
        }),
      ],
    });
    if (r.type !== 'endpoints') throw new Error(r.error.message);
    expect(r.endpoints.trafficDistribution).toBe('PreferSameZone');
    const [a, b] = r.endpoints.endpoints;
    expect(a?.forZones).toEqual(['z1', 'z2']);
    expect(b?.forZones).toBeUndefined();
  });

  it('names the Service and port in the not-found error', () => {
    const r = resolveServiceEndpoints({ namespace: 'ns', name: 'web', service: null, slices: [], port: 443 });
    if (r.type !== 'not-found') throw new Error('expected not-found');
    expect(r.error.code).toBe(ErrorCodes.SERVICE_NOT_FOUND);
    expect(r.error.details).toMatchObject({ namespace: 'ns', name: 'web', port: 443, reason: 'service-not-found' });
  });
});
