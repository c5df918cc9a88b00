import { describe, expect, test } from 'vitest';
import { SlidingCounter } from './sliding-counter.js';

describe('SlidingCounter', () => {
  test.each([
    { name: 'counts within the window', adds: [0, 1, 2, 9], at: 9, sum: 4 },
    { name: 'drops buckets that slid out', adds: [0, 1, 2, 9], at: 11, sum: 2 },
    { name: 'a long gap clears everything', adds: [0, 5], at: 40, sum: 0 },
    { name: 'a stale epoch does not rewind', adds: [5, 3], at: 5, sum: 2 },
  ])('$name', ({ adds, at, sum }) => {
    const c = new SlidingCounter(10);
    for (const epoch of adds) c.add(epoch);
    expect(c.sum(at)).toBe(sum);
  });
});
