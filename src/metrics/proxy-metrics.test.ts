import { describe, expect, it } from 'vitest';
import { Cluster } from '../cluster/cluster.js';
import { clusterInternals } from '../cluster/cluster-internals.js';
import { ManualClock } from '../core/clock.js';
import { SeededRandom } from '../core/random.js';
import { bucketQuantileMs, LATENCY_BUCKETS_S, ProxyMetrics, proxyMetricNames } from './proxy-metrics.js';

async function setup() {
  const clock = new ManualClock();
  const cluster = new Cluster({
    name: 'web',
    target: 'static:///10.0.0.1:80,10.0.0.2:80',
    policy: 'round-robin',
    clock,
    random: new SeededRandom(1),
  });
  await cluster.whenDiscovered();
  // Three connections a transport opened to the first endpoint: the cluster's stats count them.
  for (let i = 0; i < 3; i++) clusterInternals(cluster).noteConnection('10.0.0.1:80', 'opened');
  const view = { name: 'web', stats: () => cluster.stats() };
  const metrics = new ProxyMetrics(() => [view], { windowMs: 10_000, clock, processMetrics: false });
  const close = async () => {
    metrics.close();
    await cluster.destroy();
  };
  return { clock, balancer: clusterInternals(cluster).balancer, metrics, close };
}

describe('ProxyMetrics', () => {
  it('exposes the latency histogram with cumulative buckets, sum and count', async () => {
    const { metrics, close } = await setup();
    for (const ms of [0.2, 3, 3, 40, 20_000]) metrics.observeUpstream('web', '10.0.0.1:80', ms);
    const text = await metrics.registry.metrics();
    const name = proxyMetricNames.upstreamDuration;
    expect(text).toContain(`# TYPE ${name} histogram`);
    expect(text).toContain(`${name}_bucket{le="0.0005",cluster="web",endpoint="10.0.0.1:80"} 1`);
    expect(text).toContain(`${name}_bucket{le="0.005",cluster="web",endpoint="10.0.0.1:80"} 3`);
    expect(text).toContain(`${name}_bucket{le="0.05",cluster="web",endpoint="10.0.0.1:80"} 4`);
    expect(text).toContain(`${name}_bucket{le="10",cluster="web",endpoint="10.0.0.1:80"} 4`);
    expect(text).toContain(`${name}_bucket{le="+Inf",cluster="web",endpoint="10.0.0.1:80"} 5`);
    expect(text).toContain(`${name}_count{cluster="web",endpoint="10.0.0.1:80"} 5`);
    await close();
  });

  it('reads per-endpoint counters from the load records and windows the imbalance', async () => {
    const { clock, balancer, metrics, close } = await setup();
    for (let i = 0; i < 30; i++) {
      const load = balancer.loads.get('10.0.0.1:80');
      load.end(load.start(), true);
    }
    for (let i = 0; i < 10; i++) {
      const load = balancer.loads.get('10.0.0.2:80');
      load.end(load.start(), i > 0);
    }
    metrics.observeDownstream('web', 200);
    metrics.observeDownstream('web', 503);
    metrics.observeDownstream('web', 0);
    const text = await metrics.registry.metrics();
    expect(text).toContain(`${proxyMetricNames.upstreamRequests}{cluster="web",endpoint="10.0.0.1:80"} 30`);
    expect(text).toContain(`${proxyMetricNames.upstreamErrors}{cluster="web",endpoint="10.0.0.2:80"} 1`);
    expect(text).toContain(`${proxyMetricNames.upstreamConnections}{cluster="web",endpoint="10.0.0.1:80"} 3`);
    expect(text).toContain(`${proxyMetricNames.imbalanceMaxOverMean}{cluster="web"} 1.5`);
    expect(text).toContain(`${proxyMetricNames.downstreamRequests}{listener="web",code="5xx"} 1`);
    expect(text).toContain(`${proxyMetricNames.downstreamRequests}{listener="web",code="aborted"} 1`);
    // After the window passes with no new requests, the window is even again (all zero).
    clock.advance(12_000);
    expect(metrics.stats()[0]?.window.imbalance.maxOverMean).toBe(1);
    await close();
  });
});

describe('measured latency quantiles over the window', () => {
  it('p50/p99 per endpoint from the histogram, only the window counted', async () => {
    const { clock, metrics, close } = await setup();
    for (let i = 0; i < 100; i++) metrics.observeUpstream('web', '10.0.0.1:80', 400); // before the window
    clock.advance(11_000); // the sampler's first sample ages out; a new one holds the 400 ms counts
    for (let i = 0; i < 99; i++) metrics.observeUpstream('web', '10.0.0.1:80', 3);
    metrics.observeUpstream('web', '10.0.0.1:80', 40);
    clock.advance(200);
    const e = metrics.stats()[0]?.endpoints.find((x) => x.key === '10.0.0.1:80');
    expect(e?.p50Ms).toBeGreaterThan(2.5);
    expect(e?.p50Ms).toBeLessThanOrEqual(5);
    expect(e?.p99Ms).toBeLessThanOrEqual(5);
    expect(metrics.stats()[0]?.endpoints.find((x) => x.key === '10.0.0.2:80')?.p50Ms).toBeNull();
    await close();
  });

  it('bucketQuantileMs interpolates within a bucket and reads null for no counts', () => {
    const b = new Float64Array(LATENCY_BUCKETS_S.length);
    expect(bucketQuantileMs(b, 0.5)).toBeNull();
    b[4] = 10; // (5 ms, 10 ms]
    expect(bucketQuantileMs(b, 0.5)).toBeCloseTo(7.5);
  });
});
