import { describe, expect, it } from 'vitest';
import { EndpointSet } from '../../../core/endpoint-set.js';
import { endpointInputs, pickKeys, seededBalancer, tally } from '../../testing/fixtures.js';

describe('round-robin', () => {
  it('rotates through the endpoints in discovery order', () => {
    const { b } = seededBalancer('round-robin');
    b.update(EndpointSet.from(endpointInputs(5)));
    const keys = b.endpointSet.endpoints.map((e) => e.key);
    const seq = pickKeys(b, 15);
    const start = keys.indexOf(seq[0]!);
    expect(seq).toEqual(Array.from({ length: 15 }, (_, i) => keys[(start + i) % 5]));
  });

  it('starts at a random offset, so clients do not all begin on the same endpoint', () => {
    const starts = new Set<string>();
    for (let seed = 1; seed <= 40; seed++) {
      const { b } = seededBalancer('round-robin', seed);
      b.update(EndpointSet.from(endpointInputs(5)));
      starts.add(pickKeys(b, 1)[0]!);
    }
    expect(starts.size).toBe(5);
  });

  it('stays exactly fair when the picker is rebuilt after every pick', () => {
    const { b } = seededBalancer('round-robin', 3);
    b.update(EndpointSet.from(endpointInputs(7)));
    const picks: string[] = [];
    for (let i = 0; i < 7 * 100; i++) {
      picks.push(...pickKeys(b, 1));
      b.setEjected(new Set()); // publishes a new picker over the same endpoints
    }
    expect([...tally(picks).values()]).toEqual(Array(7).fill(100));
  });

  it('resumes after the last endpoint picked when the set changes without growing', () => {
    const { b } = seededBalancer('round-robin', 1);
    const set = EndpointSet.from(endpointInputs(6));
    b.update(set);
    const keys = set.endpoints.map((e) => e.key);
    const last = pickKeys(b, 3)[2]!;
    const at = keys.indexOf(last);
    // Change another endpoint's weight: rotation continues right after `last`.
    const changedIndex = (at + 3) % 6;
    b.update(EndpointSet.from(endpointInputs(6, (i) => (i === changedIndex ? { weight: 5 } : {}))));
    expect(pickKeys(b, 1)[0]).toBe(keys[(at + 1) % 6]);
  });

  // Regression: after a scale-out that appends endpoints, every client's position lay in the
  // old part of the list, so clients reached the new endpoints in waves (the new half took
  // 25% of the first quarter-rotation, then 75%).
  it('spreads many clients over a grown list at once, with no wave', () => {
    const clients = 400;
    let toNew = 0;
    let total = 0;
    for (let seed = 1; seed <= clients; seed++) {
      const { b } = seededBalancer('round-robin', seed);
      b.update(EndpointSet.from(endpointInputs(50)));
      pickKeys(b, 1 + (seed % 50));
      b.update(EndpointSet.from(endpointInputs(100)));
      const newKeys = new Set(b.endpointSet.endpoints.slice(50).map((e) => e.key));
      for (const key of pickKeys(b, 25)) {
        total++;
        if (newKeys.has(key)) toNew++;
      }
    }
    // Uniform positions over 100 endpoints: the new half takes 50% of the next 25 picks.
    expect(toNew / total).toBeGreaterThan(0.44);
    expect(toNew / total).toBeLessThan(0.56);
  });

  // Regression: resuming at "the first key sorting after the last one" skipped endpoints
  // whenever discovery order was not key order.
  const orders = [
    { order: 'key order', list: endpointInputs(6) },
    { order: 'reverse key order', list: endpointInputs(6).reverse() },
    { order: 'shuffled order', list: [3, 0, 5, 1, 4, 2].map((i) => endpointInputs(6)[i]!) },
  ];
  it.each(orders)(
    'continues at the next surviving endpoint when the last one picked is removed ($order)',
    ({ list }) => {
      for (let seed = 1; seed <= 12; seed++) {
        const { b } = seededBalancer('round-robin', seed);
        const set = EndpointSet.from(list);
        b.update(set);
        const keys = set.endpoints.map((e) => e.key);
        const at = keys.indexOf(pickKeys(b, 1)[0]!);
        // Remove the endpoint just picked and the one after it.
        const gone = new Set([keys[at], keys[(at + 1) % 6]]);
        b.update(new EndpointSet(set.endpoints.filter((e) => !gone.has(e.key))));
        expect(pickKeys(b, 1)[0]).toBe(keys[(at + 2) % 6]);
      }
    },
  );

  it('gives every endpoint its turn across frequent membership changes', () => {
    const { b } = seededBalancer('round-robin', 9);
    const list = endpointInputs(6).reverse();
    const full = EndpointSet.from(list);
    const picks: string[] = [];
    for (let round = 0; round < 300; round++) {
      // Every other round the fifth endpoint flaps out and back.
      b.update(round % 2 === 0 ? full : new EndpointSet(full.endpoints.filter((_, i) => i !== 4)));
      picks.push(...pickKeys(b, 2));
    }
    const counts = tally(picks);
    expect(counts.size).toBe(6);
    const steady = [...counts.entries()].filter(([k]) => k !== full.endpoints[4]!.key).map(([, v]) => v);
    expect(Math.max(...steady) / Math.min(...steady)).toBeLessThan(1.1);
  });
});
