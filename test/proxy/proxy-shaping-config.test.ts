/**
 * The proxy's cluster settings for slow start, the herding guard and zone routing: validated
 * by the config schema (a bad value names its field) and handed to the cluster's Balancer.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { EndpointSet } from '../../src/core/endpoint-set.js';
import { StaticEndpointSource } from '../../src/discovery/static-endpoint-source.js';
import { parseProxyConfig } from '../../src/proxy/config/proxy-config.js';
import { ProxyCluster } from '../../src/proxy/upstream/proxy-cluster.js';

const base = 'listeners: [{ address: "127.0.0.1:0" }]\nclusters:\n  - name: web\n    target: "static:///127.0.0.1:1"\n';

describe('proxy cluster shaping settings', () => {
  it('reads slowStartMs, herdingGuard and zoneRouting into the cluster config', () => {
    const config = parseProxyConfig(
      `${base}    slowStartMs: 20000\n    slowStartAggression: 2\n    herdingGuard: { maxShareMultiple: 1.2 }\n    zoneRouting: { zone: eu-1a, loadBand: 0.3 }\n`,
    );
    expect(config.clusters[0]).toMatchObject({
      slowStartMs: 20_000,
      slowStartAggression: 2,
      herdingGuard: { maxShareMultiple: 1.2 },
      zoneRouting: { zone: 'eu-1a', loadBand: 0.3 },
    });
    expect(parseProxyConfig(`${base}    herdingGuard: false\n`).clusters[0]?.herdingGuard).toBe(false);
  });

  it.each([
    { yaml: '    slowStartMs: -5\n', field: /clusters\[0\]\.slowStartMs/ },
    { yaml: '    herdingGuard: { maxShare: 2 }\n', field: /clusters\[0\]\.herdingGuard/ },
    { yaml: '    zoneRouting: { mode: always }\n', field: /clusters\[0\]\.zoneRouting\.mode/ },
  ])('rejects $yaml naming the field', ({ yaml, field }) => {
    expect(() => parseProxyConfig(base + yaml)).toThrow(field);
  });

  it('ramps a newly ready endpoint in the cluster balancer', async () => {
    const clock = new ManualClock();
    const config = parseProxyConfig(`${base}    slowStartMs: 10000\n`).clusters[0];
    if (config === undefined) throw new Error('no cluster');
    const source = new StaticEndpointSource([
      { address: '127.0.0.1', port: 1 },
      { address: '127.0.0.2', port: 1 },
    ]);
    const cluster = new ProxyCluster(config, { clock, source });
    const b = cluster.balancer;
    b.update(
      EndpointSet.from([
        { address: '127.0.0.1', port: 1 },
        { address: '127.0.0.2', port: 1 },
        { address: '127.0.0.3', port: 1 },
      ]),
    );
    clock.advance(2500);
    expect(b.weights().find((w) => w.key === '127.0.0.3:1')?.slowStart).toBeCloseTo(0.25, 2);
    await cluster.close();
  });
});
