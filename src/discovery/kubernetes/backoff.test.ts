import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../core/random.js';
import { Backoff } from './backoff.js';

describe('Backoff', () => {
  it('doubles from base to max with jitter in [50%, 100%) of each step, and resets', () => {
    const backoff = new Backoff(1000, 30_000, new SeededRandom(42));
    const ceilings = [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000];
    for (const ceiling of ceilings) {
      const delay = backoff.next();
      expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
      expect(delay).toBeLessThan(ceiling);
    }
    expect(backoff.failures).toBe(ceilings.length);
    backoff.reset();
    expect(backoff.failures).toBe(0);
    expect(backoff.next()).toBeLessThan(1000);
  });

  it('spreads delays: jitter is not constant', () => {
    const backoff = new Backoff(1000, 1000, new SeededRandom(1));
    const delays = Array.from({ length: 200 }, () => backoff.next());
    const min = Math.min(...delays);
    const max = Math.max(...delays);
    expect(min).toBeGreaterThanOrEqual(500);
    expect(max).toBeLessThan(1000);
    expect(max - min).toBeGreaterThan(400); // covers most of [500, 1000)
  });

  it('never overflows after many failures', () => {
    const backoff = new Backoff(1, 5000, new SeededRandom(3));
    for (let i = 0; i < 2000; i++) backoff.next();
    const delay = backoff.next();
    expect(Number.isFinite(delay)).toBe(true);
    expect(delay).toBeLessThan(5000);
  });
});
