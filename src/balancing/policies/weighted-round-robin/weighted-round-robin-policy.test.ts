import { describe, expect, it } from 'vitest';
import { EndpointSet } from '../../../core/endpoint-set.js';
import { SeededRandom } from '../../../core/random.js';
import { endpointInputs, pickKeys, seededBalancer, tally } from '../../testing/fixtures.js';
import { EdfSchedule } from './edf-schedule.js';

/** The longest run of `key` in `seq`. */
function longestRun(seq: readonly string[], key: string): number {
  let best = 0;
  let run = 0;
  for (const k of seq) {
    run = k === key ? run + 1 : 0;
    best = Math.max(best, run);
  }
  return best;
}

describe('weighted-round-robin', () => {
  const cases: { weights: number[] }[] = [{ weights: [5, 1, 1] }, { weights: [1, 2, 3, 4] }, { weights: [0.5, 1.5] }];
  it.each(cases)('picks weights $weights exactly, ±1 per endpoint, after every whole cycle', ({ weights }) => {
    const total = weights.reduce((a, b) => a + b, 0);
    const scale = Number.isInteger(total) ? 1 : 2; // picks per cycle must be whole
    const { b } = seededBalancer('weighted-round-robin', 4);
    const set = EndpointSet.from(endpointInputs(weights.length, (i) => ({ weight: weights[i] })));
    b.update(set);
    const picks: string[] = [];
    for (let cycle = 1; cycle <= 50; cycle++) {
      picks.push(...pickKeys(b, total * scale));
      const counts = tally(picks);
      set.endpoints.forEach((e, i) => {
        expect(Math.abs((counts.get(e.key) ?? 0) - cycle * scale * weights[i]!)).toBeLessThanOrEqual(1);
      });
    }
  });

  it('interleaves 5:1:1 smoothly: the heavy endpoint never runs more than 4 in a row', () => {
    // A plain weighted rotation (a a a a a b c) gives runs of 5; nginx's smooth WRR gives at most 4.
    for (let seed = 1; seed <= 20; seed++) {
      const { b } = seededBalancer('weighted-round-robin', seed);
      b.update(EndpointSet.from(endpointInputs(3, (i) => ({ weight: i === 0 ? 5 : 1 }))));
      const seq = pickKeys(b, 700);
      expect(longestRun(seq, b.endpointSet.endpoints[0]!.key)).toBeLessThanOrEqual(4);
    }
  });

  it('rotates equal weights like round-robin: each endpoint once per n picks', () => {
    const { b } = seededBalancer('weighted-round-robin', 2);
    b.update(EndpointSet.from(endpointInputs(6)));
    for (let round = 0; round < 20; round++) expect(new Set(pickKeys(b, 6)).size).toBe(6);
  });

  it('keeps its schedule across picker rebuilds', () => {
    const { b } = seededBalancer('weighted-round-robin', 8);
    const set = EndpointSet.from(endpointInputs(3, (i) => ({ weight: i + 1 })));
    b.update(set);
    const picks: string[] = [];
    for (let i = 0; i < 600; i++) {
      picks.push(...pickKeys(b, 1));
      b.setEjected(new Set()); // a new picker over the same endpoints, every pick
    }
    const counts = tally(picks);
    set.endpoints.forEach((e, i) => {
      expect(Math.abs(counts.get(e.key)! - 100 * (i + 1))).toBeLessThanOrEqual(1);
    });
  });

  it('lets a new endpoint in at once and at its weight', () => {
    const { b } = seededBalancer('weighted-round-robin', 5);
    b.update(EndpointSet.from(endpointInputs(3)));
    pickKeys(b, 10);
    b.update(EndpointSet.from(endpointInputs(4, (i) => ({ weight: i === 3 ? 3 : 1 }))));
    const newcomer = b.endpointSet.endpoints[3]!.key;
    const first = pickKeys(b, 6);
    expect(first).toContain(newcomer);
    const counts = tally([...first, ...pickKeys(b, 600 - 6)]);
    expect(Math.abs(counts.get(newcomer)! - 300)).toBeLessThanOrEqual(1);
  });

  it('rescales the remaining turn when an endpoint weight changes', () => {
    const { b } = seededBalancer('weighted-round-robin', 6);
    b.update(EndpointSet.from(endpointInputs(2)));
    pickKeys(b, 7);
    const set = EndpointSet.from(endpointInputs(2, (i) => ({ weight: i === 0 ? 4 : 1 })));
    b.update(set);
    const counts = tally(pickKeys(b, 500));
    expect(Math.abs(counts.get(set.endpoints[0]!.key)! - 400)).toBeLessThanOrEqual(1);
  });
});

describe('EdfSchedule', () => {
  it('picks the earliest deadline, ties to the lower index', () => {
    const s = new EdfSchedule(['a', 'b', 'c'], new Float64Array([1, 1, 2]), new Float64Array([0.5, 0.5, 0.25]));
    // c due 0.25; a and b at 0.5 (a first); c at 0.75 and 1.25; a again at 1.5.
    expect(Array.from({ length: 6 }, () => s.keys[s.pick()])).toEqual(['c', 'a', 'b', 'c', 'c', 'a']);
  });

  it.each([
    { name: 'heap: weights 1-5', weight: (random: SeededRandom) => 1 + random.int(5), spread: 50 },
    { name: 'heap: equal weights, deadlines over 25 periods', weight: () => 2, spread: 50 },
    { name: 'rotation: equal weights, deadlines within a period', weight: () => 2, spread: 0.98 },
  ])('orders 1,000 random deadlines like a sort, ties by index ($name)', ({ weight, spread }) => {
    const n = 1000;
    const random = new SeededRandom(5);
    const weights = new Float64Array(n).map(() => weight(random));
    const deadlines = new Float64Array(n).map((_, i) => (random.int(50) * spread) / 50 / weights[i]!);
    const s = new EdfSchedule(
      Array.from({ length: n }, (_, i) => String(i)),
      weights,
      deadlines.slice(),
    );
    // Reference: repeatedly take the minimum (deadline, index) by a linear scan.
    const ref = deadlines.slice();
    for (let p = 0; p < 5000; p++) {
      let best = 0;
      for (let i = 1; i < n; i++) if (ref[i]! < ref[best]!) best = i;
      expect(s.pick()).toBe(best);
      ref[best]! += 1 / weights[best]!;
    }
  });

  it('reports the time left until an endpoint is due', () => {
    const s = new EdfSchedule(['a', 'b'], new Float64Array([1, 2]), new Float64Array([0.3, 0.1]));
    expect(s.keys[s.pick()]).toBe('b');
    expect(s.time).toBeCloseTo(0.1, 12);
    const left = s.remainingAll();
    expect(left[0]).toBeCloseTo(0.2, 12);
    expect(left[1]).toBeCloseTo(0.5, 12);
  });
});
