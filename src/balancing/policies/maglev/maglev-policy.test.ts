import { describe, expect, it } from 'vitest';
import { EndpointSet } from '../../../core/endpoint-set.js';
import { ErrorCodes } from '../../../core/errors.js';
import { hashKey } from '../../picker.js';
import { endpointInputs, pickKey, seededBalancer } from '../../testing/fixtures.js';
import { buildMaglevTable, maglevPolicy } from './maglev-policy.js';
import { isPrime, nextPrime } from './maglev-table.js';

const keys = (n: number): string[] => Array.from({ length: n }, (_, i) => `10.0.${i >> 8}.${i & 255}:8443`);

function slotCounts(slots: Int32Array, n: number): number[] {
  const counts = new Array<number>(n).fill(0);
  for (const s of slots) counts[s]!++;
  return counts;
}

describe('maglev', () => {
  it.each([
    { n: 3, size: 13 },
    { n: 10, size: 65_537 },
    { n: 1000, size: 65_537 },
  ])('fills every slot of a $size table, $n endpoints within one slot of each other', ({ n, size }) => {
    const table = buildMaglevTable(keys(n), new Float64Array(n).fill(1), size);
    expect(table.slots.length).toBe(size);
    const counts = slotCounts(table.slots, n);
    expect(Math.min(...counts)).toBeGreaterThanOrEqual(Math.floor(size / n));
    expect(Math.max(...counts)).toBeLessThanOrEqual(Math.ceil(size / n));
  });

  it('gives slots in proportion to weight', () => {
    const weights = [1, 2, 3, 4];
    const table = buildMaglevTable(keys(4), new Float64Array(weights), 65_537);
    slotCounts(table.slots, 4).forEach((c, i) => {
      expect(Math.abs(c / ((65_537 * weights[i]!) / 10) - 1)).toBeLessThan(0.01);
    });
  });

  it('grows the table when there are more endpoints than slots, so everyone is reachable', () => {
    const table = buildMaglevTable(keys(20), new Float64Array(20).fill(1), 7);
    expect(table.slots.length).toBe(nextPrime(160));
    expect(Math.min(...slotCounts(table.slots, 20))).toBeGreaterThanOrEqual(7);
  });

  it('is the same table whatever the discovery order', () => {
    const { b: a } = seededBalancer('maglev', 1, { tableSize: 1009 });
    const { b: c } = seededBalancer('maglev', 2, { tableSize: 1009 });
    a.update(EndpointSet.from(endpointInputs(12)));
    c.update(EndpointSet.from(endpointInputs(12).reverse()));
    for (let i = 0; i < 1009; i++) expect(pickKey(a.picker, { hash: i })).toBe(pickKey(c.picker, { hash: i }));
  });

  it('reuses its table when rebuilt over the same endpoints, and refills it when they change', () => {
    const { b } = seededBalancer('maglev', 1, { tableSize: 1009 });
    b.update(EndpointSet.from(endpointInputs(5)));
    const owners = () => Array.from({ length: 1009 }, (_, hash) => pickKey(b.picker, { hash }));
    const before = owners();
    b.setEjected(new Set(['10.0.0.2:8443']));
    const ejected = owners();
    expect(ejected).not.toContain('10.0.0.2:8443');
    b.setEjected(new Set());
    expect(owners()).toEqual(before);
    b.update(EndpointSet.from(endpointInputs(5, (i) => ({ weight: i === 0 ? 3 : 1 }))));
    const heavy = owners().filter((k) => k === '10.0.0.0:8443').length;
    expect(heavy / 1009).toBeCloseTo(3 / 7, 1);
  });

  it('on exclude, takes a neighbouring slot of another endpoint (stable per key)', () => {
    const { b } = seededBalancer('maglev');
    b.update(EndpointSet.from(endpointInputs(6)));
    for (let i = 0; i < 200; i++) {
      const hash = hashKey(`k${i}`);
      const primary = pickKey(b.picker, { hash });
      const retry = pickKey(b.picker, { hash, exclude: primary });
      expect(retry).not.toBe(primary);
      expect(pickKey(b.picker, { hash, exclude: primary })).toBe(retry);
    }
  });

  it.each([65_536, 100, 1])('rejects tableSize %d (not a prime >= 3)', (tableSize) => {
    expect(() => maglevPolicy.parseOptions({ tableSize })).toThrow(
      expect.objectContaining({ code: ErrorCodes.INVALID_OPTION, message: expect.stringContaining('"tableSize"') }),
    );
  });

  it('primes', () => {
    expect([2, 3, 13, 65_537, 262_139].every(isPrime)).toBe(true);
    expect([0, 1, 4, 9, 65_535, 262_140].some(isPrime)).toBe(false);
    expect(nextPrime(65_536)).toBe(65_537);
  });
});
