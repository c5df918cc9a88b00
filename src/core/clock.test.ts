import { describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from './clock.js';

describe('ManualClock', () => {
  it('starts where told and moves only when advanced', () => {
    const clock = new ManualClock(1000);
    expect(clock.now()).toBe(1000);
    clock.advance(250.5);
    expect(clock.now()).toBe(1250.5);
    expect(new ManualClock().now()).toBe(0);
  });

  it('fires due timers in time order, equal times in scheduling order, with now() at the due time', () => {
    const clock = new ManualClock();
    const log: string[] = [];
    const at = (name: string) => () => log.push(`${name}@${clock.now()}`);
    clock.setTimeout(at('c'), 30);
    clock.setTimeout(at('a'), 10);
    clock.setTimeout(at('b1'), 20);
    clock.setTimeout(at('b2'), 20);
    clock.setTimeout(at('late'), 100);
    clock.advance(50);
    expect(log).toEqual(['a@10', 'b1@20', 'b2@20', 'c@30']);
    expect(clock.now()).toBe(50);
    clock.advance(50);
    expect(log.at(-1)).toBe('late@100');
  });

  it('runs timers scheduled by a firing timer when they fall due within the same advance', () => {
    const clock = new ManualClock();
    const log: number[] = [];
    clock.setTimeout(() => {
      log.push(clock.now());
      clock.setTimeout(() => log.push(clock.now()), 5);
      clock.setTimeout(() => log.push(clock.now()), 0);
    }, 10);
    clock.advance(12);
    expect(log).toEqual([10, 10]);
    clock.advance(3);
    expect(log).toEqual([10, 10, 15]);
  });

  it('cancels timers, and treats negative delays as 0', () => {
    const clock = new ManualClock();
    const log: string[] = [];
    const t = clock.setTimeout(() => log.push('cancelled'), 5);
    clock.setTimeout(() => log.push('now'), -10);
    t.cancel();
    t.cancel();
    clock.advance(0);
    clock.advance(10);
    expect(log).toEqual(['now']);
  });

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY])('refuses to advance by %d ms', (ms) => {
    // Regression: a negative step moved time backwards; NaN poisoned every later reading.
    const clock = new ManualClock(5);
    expect(() => clock.advance(ms)).toThrow(RangeError);
    expect(clock.now()).toBe(5);
  });
});

describe('systemClock', () => {
  it('is monotonic and fires unref’d timers', async () => {
    const a = systemClock.now();
    const fired = await new Promise<number>((resolve) => systemClock.setTimeout(() => resolve(systemClock.now()), 5));
    expect(fired).toBeGreaterThanOrEqual(a);
    let ran = false;
    systemClock.setTimeout(() => (ran = true), 1).cancel();
    // A later timer on the same clock: once it fires, the cancelled one would have.
    await new Promise<void>((resolve) => systemClock.setTimeout(resolve, 10));
    expect(ran).toBe(false);
  });
});
