import { describe, expect, it } from 'vitest';
import { EndpointSet } from '../../../core/endpoint-set.js';
import { ErrorCodes } from '../../../core/errors.js';
import { endpointInputs, pickKeys, seededBalancer, tally } from '../../testing/fixtures.js';
import { leastRequestPolicy } from './least-request-policy.js';

describe('least-request', () => {
  /** A balancer over `inFlight.length` endpoints with those requests in flight. */
  function loaded(inFlight: number[], choiceCount?: number, weights?: number[]) {
    const { b } = seededBalancer('least-request', 11, choiceCount === undefined ? undefined : { choiceCount });
    b.update(EndpointSet.from(endpointInputs(inFlight.length, (i) => ({ weight: weights?.[i] ?? 1 }))));
    b.picker.endpoints.forEach((t, i) => {
      for (let k = 0; k < inFlight[i]!; k++) t.load.start();
    });
    const keys = b.endpointSet.endpoints.map((e) => e.key);
    return { b, keys };
  }

  it('with choiceCount = n always takes the endpoint with the fewest in flight', () => {
    const { b, keys } = loaded([4, 2, 7, 1, 3], 5);
    expect(new Set(pickKeys(b, 1000))).toEqual(new Set([keys[3]]));
  });

  it('draws two distinct endpoints uniformly: P(pick) = P(in the pair and the less loaded)', () => {
    // In flight 0, 1, 2: endpoint 0 wins whenever drawn (2/3), endpoint 1 only against 2 (1/3).
    const { b, keys } = loaded([0, 1, 2]);
    const counts = tally(pickKeys(b, 30_000));
    expect(counts.get(keys[0]!)! / 30_000).toBeCloseTo(2 / 3, 1);
    expect(Math.abs(counts.get(keys[0]!)! / 20_000 - 1)).toBeLessThan(0.03);
    expect(Math.abs(counts.get(keys[1]!)! / 10_000 - 1)).toBeLessThan(0.05);
    expect(counts.get(keys[2]!)).toBeUndefined();
  });

  it('with choiceCount 3 of 4 never picks either of the two most loaded', () => {
    // Any 3 of 4 endpoints include endpoint 0 or 1 (in flight 0 and 1).
    const { b, keys } = loaded([0, 1, 5, 9], 3);
    const counts = tally(pickKeys(b, 20_000));
    expect(counts.get(keys[2]!)).toBeUndefined();
    expect(counts.get(keys[3]!)).toBeUndefined();
    // Endpoint 0 is in 3 of the 4 triples.
    expect(Math.abs(counts.get(keys[0]!)! / 15_000 - 1)).toBeLessThan(0.05);
  });

  it('compares in-flight per unit of weight', () => {
    // Weight 4 with 4 in flight (1 per unit) beats weight 1 with 2 in flight (2 per unit).
    const { b, keys } = loaded([4, 2], 2, [4, 1]);
    expect(new Set(pickKeys(b, 500))).toEqual(new Set([keys[0]]));
  });

  it.each([
    { choiceCount: 0, received: '0' },
    { choiceCount: 2.5, received: '2.5' },
    { choiceCount: '2', received: '"2"' },
    { choiceCount: 65, received: '65' },
  ])('rejects choiceCount $choiceCount', ({ choiceCount, received }) => {
    expect(() => leastRequestPolicy.parseOptions({ choiceCount })).toThrow(
      expect.objectContaining({
        code: ErrorCodes.INVALID_OPTION,
        message: `least-request policy: option "choiceCount" must be an integer between 1 and 64; received ${received}`,
      }),
    );
  });
});
