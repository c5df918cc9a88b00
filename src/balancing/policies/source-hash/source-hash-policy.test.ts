import { describe, expect, it } from 'vitest';
import { EndpointSet } from '../../../core/endpoint-set.js';
import { hashKey } from '../../picker.js';
import { endpointInputs, pickKey, seededBalancer } from '../../testing/fixtures.js';

describe('source-hash', () => {
  it('maps a key to sorted[hash mod n], like IPVS sh', () => {
    const { b } = seededBalancer('source-hash');
    b.update(EndpointSet.from(endpointInputs(12).reverse()));
    const sorted = b.endpointSet.endpoints.map((e) => e.key).sort();
    for (let i = 0; i < 1000; i++) {
      const hash = hashKey(`203.0.113.${i % 256}:${i}`);
      expect(pickKey(b.picker, { hash })).toBe(sorted[hash % 12]);
    }
  });

  it('maps weighted sets by cumulative weight', () => {
    const { b } = seededBalancer('source-hash');
    b.update(EndpointSet.from(endpointInputs(2, (i) => ({ weight: i === 0 ? 1 : 3 }))));
    const [light, heavy] = b.endpointSet.endpoints.map((e) => e.key);
    expect(pickKey(b.picker, { hash: 0 })).toBe(light);
    expect(pickKey(b.picker, { hash: 2 ** 30 - 1 })).toBe(light);
    expect(pickKey(b.picker, { hash: 2 ** 30 })).toBe(heavy);
    expect(pickKey(b.picker, { hash: 2 ** 32 - 1 })).toBe(heavy);
  });

  it('on exclude, takes the next endpoint in key order', () => {
    const { b } = seededBalancer('source-hash');
    b.update(EndpointSet.from(endpointInputs(5)));
    const sorted = b.endpointSet.endpoints.map((e) => e.key).sort();
    expect(pickKey(b.picker, { hash: 9, exclude: sorted[4] })).toBe(sorted[0]);
    expect(pickKey(b.picker, { hash: 7, exclude: sorted[2] })).toBe(sorted[3]);
  });
});
