import { describe, expect, it } from 'vitest';
import { EndpointSet } from '../../../core/endpoint-set.js';
import { endpointInputs, pickKeys, seededBalancer, tally } from '../../testing/fixtures.js';

describe('random', () => {
  it('is memoryless: the pick after an endpoint is any endpoint, uniformly', () => {
    const { b } = seededBalancer('random', 3);
    b.update(EndpointSet.from(endpointInputs(4)));
    const seq = pickKeys(b, 80_000);
    const first = seq[0]!;
    const followers = tally(seq.filter((_, i) => i > 0 && seq[i - 1] === first));
    const n = [...followers.values()].reduce((a, c) => a + c, 0);
    expect(followers.size).toBe(4);
    for (const c of followers.values()) expect(Math.abs(c / (n / 4) - 1)).toBeLessThan(0.08);
  });

  it('picks a heavily weighted endpoint in proportion (1:99)', () => {
    const { b } = seededBalancer('random', 4);
    b.update(EndpointSet.from(endpointInputs(2, (i) => ({ weight: i === 0 ? 1 : 99 }))));
    const light = tally(pickKeys(b, 100_000)).get(b.endpointSet.endpoints[0]!.key)!;
    expect(Math.abs(light / 1000 - 1)).toBeLessThan(0.1);
  });
});
