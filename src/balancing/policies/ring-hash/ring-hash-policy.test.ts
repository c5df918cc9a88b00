import { describe, expect, it } from 'vitest';
import { EndpointSet } from '../../../core/endpoint-set.js';
import { ErrorCodes } from '../../../core/errors.js';
import { hashKey } from '../../picker.js';
import { mix32With } from '../../sampling/mix32.js';
import { endpointInputs, pickKey, seededBalancer } from '../../testing/fixtures.js';
import { HashRing } from './hash-ring.js';
import { type RingHashOptions, ringHashPolicy, ringPointCounts } from './ring-hash-policy.js';

const defaults: RingHashOptions = ringHashPolicy.parseOptions(undefined);

describe('ring-hash', () => {
  const countCases: { name: string; weights: number[]; options: Partial<RingHashOptions>; counts: number[] }[] = [
    { name: 'replicas per endpoint', weights: [1, 1, 1, 1, 1], options: {}, counts: [256, 256, 256, 256, 256] },
    { name: 'weights relative to the smallest', weights: [2, 4, 3], options: {}, counts: [256, 512, 384] },
    { name: 'scaled up to minRingSize', weights: [1, 1], options: { minRingSize: 1024 }, counts: [512, 512] },
    {
      name: 'scaled down to maxRingSize',
      weights: [1, 3],
      options: { replicas: 1000, maxRingSize: 400 },
      counts: [100, 300],
    },
    { name: 'never below one point', weights: [1, 10_000], options: { maxRingSize: 1000 }, counts: [1, 1000] },
  ];
  it.each(countCases)('ring points: $name', ({ weights, options, counts }) => {
    expect([...ringPointCounts(new Float64Array(weights), { ...defaults, ...options })]).toEqual(counts);
  });

  it.each([
    { name: 'few points (small buckets)', n: 3, points: 5 },
    { name: 'many points', n: 500, points: 300 },
  ])('orders the ring like a sort of every point, ties in endpoint order ($name)', ({ n, points }) => {
    const bases = Array.from({ length: n }, (_, i) => hashKey(`e${i}`));
    const ring = new HashRing(bases, new Array(n).fill(points));
    const reference = bases
      .flatMap((base, i) => Array.from({ length: points }, (_, j) => [mix32With(base, j), i] as const))
      .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    expect(Array.from(ring.hashes)).toEqual(reference.map((r) => r[0]));
    expect(Array.from(ring.owners)).toEqual(reference.map((r) => r[1]));
  });

  it('builds a sorted ring and finds the first point at or after a hash, wrapping', () => {
    const ring = new HashRing([hashKey('a'), hashKey('b'), hashKey('c')], [50, 50, 50]);
    expect(ring.size).toBe(150);
    for (let i = 1; i < ring.size; i++) expect(ring.hashes[i]!).toBeGreaterThanOrEqual(ring.hashes[i - 1]!);
    const last = ring.hashes[ring.size - 1]!;
    expect(ring.locate(last)).toBe(ring.size - 1);
    expect(ring.locate(last + 1)).toBe(0);
    expect(ring.locate(0)).toBe(0);
    for (let i = 0; i < 2000; i++) {
      const h = hashKey(`k${i}`);
      const at = ring.locate(h);
      // Linear reference: the first point >= h, else 0.
      const ref = ring.hashes.findIndex((x) => x >= h);
      expect(at).toBe(Math.max(ref, 0));
    }
  });

  it('keeps a key on its endpoint while the endpoint stays', () => {
    const { b } = seededBalancer('ring-hash');
    b.update(EndpointSet.from(endpointInputs(8)));
    const ctx = { hash: hashKey('user-42') };
    const first = pickKey(b.picker, ctx);
    for (let i = 0; i < 100; i++) expect(pickKey(b.picker, ctx)).toBe(first);
    // Remove another endpoint: this key stays put.
    b.update(new EndpointSet(b.endpointSet.endpoints.filter((e) => e.key === first || e.key.endsWith('.5:8443'))));
    expect(pickKey(b.picker, ctx)).toBe(first);
  });

  it('on exclude, walks on to the next endpoint on the ring (stable per key)', () => {
    const { b } = seededBalancer('ring-hash');
    b.update(EndpointSet.from(endpointInputs(8)));
    for (let i = 0; i < 200; i++) {
      const hash = hashKey(`k${i}`);
      const primary = pickKey(b.picker, { hash });
      const retry = pickKey(b.picker, { hash, exclude: primary });
      expect(retry).not.toBe(primary);
      expect(pickKey(b.picker, { hash, exclude: primary })).toBe(retry);
    }
  });

  it('rejects maxRingSize below minRingSize', () => {
    expect(() => ringHashPolicy.parseOptions({ minRingSize: 4096, maxRingSize: 1024 })).toThrow(
      expect.objectContaining({
        code: ErrorCodes.INVALID_OPTION,
        message: 'ring-hash policy: option "maxRingSize" must be >= minRingSize (4096); received 1024',
      }),
    );
  });
});
