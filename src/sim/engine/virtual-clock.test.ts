import { describe, expect, it } from 'vitest';
import { Scheduler } from './scheduler.js';
import { VirtualClock } from './virtual-clock.js';

describe('VirtualClock', () => {
  it('fires timers on virtual time, in order, with now() at their due time', () => {
    const scheduler = new Scheduler();
    const clock = new VirtualClock(scheduler);
    const fired: [string, number][] = [];
    clock.setTimeout(() => fired.push(['b', clock.now()]), 250);
    clock.setTimeout(() => fired.push(['a', clock.now()]), 100);
    clock.setTimeout(() => fired.push(['c', clock.now()]), 250);
    scheduler.runUntil(1000);
    expect(fired).toEqual([
      ['a', 100],
      ['b', 250],
      ['c', 250],
    ]);
    expect(clock.now()).toBe(1000);
  });

  it('skips cancelled timers, also after their slot is reused', () => {
    const scheduler = new Scheduler();
    const clock = new VirtualClock(scheduler);
    const fired: string[] = [];
    const first = clock.setTimeout(() => fired.push('cancelled'), 50);
    first.cancel();
    clock.setTimeout(() => fired.push('reused'), 80);
    first.cancel();
    scheduler.runUntil(100);
    expect(fired).toEqual(['reused']);
    expect(clock.pendingTimers).toBe(0);
  });

  it('lets a timer arm another one', () => {
    const scheduler = new Scheduler();
    const clock = new VirtualClock(scheduler);
    const times: number[] = [];
    const tick = () => {
      times.push(clock.now());
      if (times.length < 4) clock.setTimeout(tick, 10);
    };
    clock.setTimeout(tick, 10);
    scheduler.runUntil(Number.POSITIVE_INFINITY);
    expect(times).toEqual([10, 20, 30, 40]);
  });

  it('treats negative and non-finite delays as 0', () => {
    const scheduler = new Scheduler();
    const clock = new VirtualClock(scheduler);
    const times: number[] = [];
    clock.setTimeout(() => times.push(clock.now()), -5);
    clock.setTimeout(() => times.push(clock.now()), Number.NaN);
    scheduler.runUntil(1);
    expect(times).toEqual([0, 0]);
  });
});

describe('Scheduler', () => {
  it('returns from runUntil(Infinity) once the queue is empty (regression: Infinity <= Infinity)', () => {
    const scheduler = new Scheduler();
    let ran = 0;
    const kind = scheduler.register(() => ran++);
    scheduler.after(5, kind);
    expect(scheduler.runUntil(Number.POSITIVE_INFINITY)).toBe(true);
    expect(ran).toBe(1);
    expect(scheduler.now).toBe(5);
  });

  it('stops after the current event when asked', () => {
    const scheduler = new Scheduler();
    const seen: number[] = [];
    const kind = scheduler.register((a) => {
      seen.push(a);
      if (a === 2) scheduler.stop();
    });
    for (let i = 1; i <= 4; i++) scheduler.after(i, kind, i);
    expect(scheduler.runUntil(100)).toBe(false);
    expect(seen).toEqual([1, 2]);
    expect(scheduler.pending).toBe(2);
  });
});
