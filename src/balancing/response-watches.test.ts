import { describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import { LoadTracker } from './endpoint-load.js';
import { ResponseWatches } from './response-watches.js';

describe('ResponseWatches', () => {
  it('fires each watch once, at the first count that reaches it, and disarms it first', () => {
    const w = new ResponseWatches();
    const fired: string[] = [];
    w.add(3, 2, () => fired.push('a2'));
    w.add(3, 4, () => fired.push('a4'));
    w.add(5, 1, () => fired.push('b1'));
    expect(w.size).toBe(2);
    w.check(3, 1);
    expect(fired).toEqual([]);
    w.check(3, 2);
    w.check(3, 3);
    expect(fired).toEqual(['a2']);
    w.check(3, 9);
    w.check(3, 10);
    expect(fired).toEqual(['a2', 'a4']);
    expect(w.size).toBe(1);
    w.check(5, 1);
    expect(fired).toEqual(['a2', 'a4', 'b1']);
    expect(w.size).toBe(0);
  });

  it('disarms: a stop function (idempotent, harmless after firing) or every watch on an index', () => {
    const w = new ResponseWatches();
    const fired: string[] = [];
    const stop = w.add(1, 1, () => fired.push('x'));
    w.add(1, 1, () => fired.push('y'));
    stop();
    stop();
    w.check(1, 1);
    expect(fired).toEqual(['y']);
    w.add(2, 1, () => fired.push('z'));
    w.clear(2);
    w.check(2, 5);
    expect(fired).toEqual(['y']);
    expect(w.size).toBe(0);
  });

  it('a listener may arm and disarm watches while the others due are being called', () => {
    const w = new ResponseWatches();
    const fired: string[] = [];
    let stopLater = (): void => undefined;
    w.add(1, 1, () => {
      fired.push('first');
      stopLater();
      w.add(1, 3, () => fired.push('re-armed'));
    });
    w.add(1, 1, () => fired.push('second'));
    stopLater = w.add(1, 2, () => fired.push('never'));
    w.check(1, 1);
    w.check(1, 2);
    w.check(1, 3);
    expect(fired).toEqual(['first', 'second', 're-armed']);
  });

  it('the tracker checks them after every response, and a pruned record takes its watches with it', () => {
    const tracker = new LoadTracker(new ManualClock());
    const a = tracker.get('a');
    const fired: number[] = [];
    tracker.watchResponses(a.index, 3, () => fired.push(a.successes + a.errors));
    a.end(a.start(), true);
    a.end(a.start(), false);
    expect(fired).toEqual([]);
    a.end(a.start(), true);
    expect(fired).toEqual([3]);
    const b = tracker.get('b');
    const freed = b.index;
    tracker.watchResponses(freed, 1, () => fired.push(-1));
    tracker.prune(new Set(['a']));
    const c = tracker.get('c');
    expect(c.index).toBe(freed);
    c.end(c.start(), true);
    expect(fired).toEqual([3]);
  });
});
