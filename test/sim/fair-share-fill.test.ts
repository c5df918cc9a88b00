/**
 * The demo's `recycler` phase in the simulator: 20 pinned clients (one connection each, 80
 * requests/s) over 4 pods behind kube-proxy's iptables model, scaled to 5, every pod shedding
 * by fair share with the demo's settings and the `connections` load. The new pod's share of the
 * requests from the scale-out + 0.3 s over the demo's 2.45 s window, over many seeds: what the
 * demo's ≥ 90% point rests on, measured without a busy machine's noise. Re-dials take 30–90 ms
 * (the demo's clients send the next request ~12 ms after a `Connection: close`, the pods and the
 * peers' answers lag on a loaded machine).
 */
import { describe, expect, it } from 'vitest';
import { result, runRaw } from './support.js';

const SEEDS = 60;

function demoRecycler(fairShare: Record<string, unknown>) {
  return {
    name: 'demo-recycler',
    pods: { count: 4, workers: 8, serviceTime: { type: 'exponential', meanMs: 0.5 }, readyDelayMs: 0 },
    clients: {
      count: 20,
      connections: 20,
      arrival: { type: 'periodic', ratePerSecond: 80 },
      reconnectDelay: { type: 'uniform', minMs: 30, maxMs: 90 },
    },
    server: {
      fairShare: {
        loadMetric: 'connections',
        periodMs: 100,
        windowMs: 300,
        warmupMs: 600,
        cooldownMs: 50,
        maxShedFraction: 0.5,
        peersPerPeriod: 4,
        peerTtlMs: 200,
        ...fairShare,
      },
    },
    events: [{ type: 'scale', atMs: 4400, pods: 5 }],
    measure: { from: 4700, windowMs: 2450 },
  };
}

/** The new pod's share of fair (1 = fair) and max/mean, one run per seed. */
function runs(fairShare: Record<string, unknown>): { share: number; maxOverMean: number }[] {
  const out: { share: number; maxOverMean: number }[] = [];
  for (let seed = 1; seed <= SEEDS; seed++) {
    const r = result(runRaw(demoRecycler(fairShare), ['iptables'], seed), 'iptables');
    const measured = r.pods.filter((p) => p.measured);
    const newest = measured.reduce((a, b) => (b.createdAtMs > a.createdAtMs ? b : a));
    out.push({ share: newest.overMean, maxOverMean: r.maxOverMean });
    expect(r.requests.failed).toBe(0);
  }
  return out;
}

const fraction = (xs: readonly boolean[]): number => xs.filter(Boolean).length / xs.length;
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

describe('fair share fills a scaled-out pod (the demo recycler phase, simulated)', () => {
  it('the new pod reaches 90% of its fair share in at least 90% of runs; max/mean stays ≤ 1.15', () => {
    const r = runs({});
    const summary = `shares ${r.map((x) => x.share.toFixed(2)).join(' ')}`;
    // Measured: 58 of 60 seeds at ≥ 0.9, median share 1.01, median max/mean 1.05 (the stated
    // tolerance leaves room for 4 more misses). Before the connections load stopped counting
    // each shed twice: 38 of 60, median 0.92.
    expect(fraction(r.map((x) => x.share >= 0.9)), summary).toBeGreaterThanOrEqual(0.9);
    expect(median(r.map((x) => x.share)), summary).toBeGreaterThanOrEqual(0.95);
    expect(median(r.map((x) => x.maxOverMean)), summary).toBeLessThanOrEqual(1.15);
  }, 60_000);

  it('a 100 ms cooldown with a 100 ms period fills more slowly (the demo uses 50 ms)', () => {
    const slow = runs({ cooldownMs: 100 });
    const fast = runs({});
    const mean = (xs: readonly { share: number }[]): number => xs.reduce((a, b) => a + b.share, 0) / xs.length;
    expect(mean(fast)).toBeGreaterThan(mean(slow));
  }, 60_000);
});
