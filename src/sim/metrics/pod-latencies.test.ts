import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../core/random.js';
import { LatencyHistogram } from './latency-histogram.js';
import { PodLatencies } from './pod-latencies.js';

describe('PodLatencies', () => {
  it('gives every pod exactly the histogram a LatencyHistogram fed the same values would, across growth', () => {
    const random = new SeededRandom(5);
    const store = new PodLatencies(1.1, 4);
    const reference = Array.from({ length: 37 }, () => new LatencyHistogram(1.1));
    for (let n = 0; n < 20_000; n++) {
      const pod = random.int(reference.length);
      // Lognormal-ish spread from sub-microsecond to beyond the last bucket.
      const ms = n % 997 === 0 ? 5e12 : n % 991 === 0 ? 0 : Math.exp(random.next() * 16 - 6);
      const log = Math.log(ms / LatencyHistogram.MIN_MS);
      store.record(pod, ms, log);
      (reference[pod] as LatencyHistogram).recordWithLog(ms, log);
    }
    reference.forEach((want, pod) => {
      const got = store.histogram(pod);
      expect(got.count).toBe(want.count);
      expect(got.meanMs).toBe(want.meanMs);
      expect(got.maxMs).toBe(want.maxMs);
      for (const q of [0.01, 0.5, 0.9, 0.99, 1]) expect(got.quantile(q)).toBe(want.quantile(q));
    });
    expect(store.histogram(1000).count).toBe(0);
  });

  it('refuses counts of another bucket layout', () => {
    expect(() => LatencyHistogram.fromCounts(1.1, new Uint32Array(3), 0, 0)).toThrow(/expected 291 bucket counts/);
  });
});
