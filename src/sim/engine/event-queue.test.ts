import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../core/random.js';
import { EventQueue } from './event-queue.js';

function drain(q: EventQueue): { time: number; kind: number; a: number; b: number }[] {
  const out: { time: number; kind: number; a: number; b: number }[] = [];
  while (q.pop()) out.push({ time: q.time, kind: q.kind, a: q.a, b: q.b });
  return out;
}

describe('EventQueue', () => {
  it('pops in time order and breaks ties by insertion order', () => {
    const q = new EventQueue();
    q.push(5, 1, 0, 0);
    q.push(1, 2, 0, 0);
    q.push(5, 3, 0, 0);
    q.push(0, 4, 0, 0);
    q.push(5, 5, 0, 0);
    expect(drain(q).map((e) => e.kind)).toEqual([4, 2, 1, 3, 5]);
  });

  it('keeps both arguments with their event', () => {
    const q = new EventQueue();
    q.push(2, 7, 11, -3);
    q.push(1, 8, 12, 42);
    expect(drain(q)).toEqual([
      { time: 1, kind: 8, a: 12, b: 42 },
      { time: 2, kind: 7, a: 11, b: -3 },
    ]);
  });

  it('matches a stable sort on 50,000 random events, pushed and popped interleaved, across growth', () => {
    const r = new SeededRandom(7);
    const q = new EventQueue();
    const expected: { time: number; seq: number }[] = [];
    const got: number[] = [];
    let seq = 0;
    let now = 0;
    for (let i = 0; i < 50_000; i++) {
      // Coarse times so many events tie.
      const time = now + Math.floor(r.next() * 20);
      q.push(time, 0, seq, 0);
      expected.push({ time, seq });
      seq++;
      if (r.next() < 0.4 && q.pop()) {
        got.push(q.a);
        now = q.time;
      }
    }
    while (q.pop()) got.push(q.a);
    // Popped order must be non-decreasing in time with ties in push order.
    const bySeq = new Map(expected.map((e) => [e.seq, e.time]));
    for (let i = 1; i < got.length; i++) {
      const prev = got[i - 1] as number;
      const cur = got[i] as number;
      const tPrev = bySeq.get(prev) as number;
      const tCur = bySeq.get(cur) as number;
      if (tCur === tPrev) expect(cur).toBeGreaterThan(prev);
    }
    expect(got).toHaveLength(50_000);
    expect(new Set(got).size).toBe(50_000);
  });

  it('reports an empty queue', () => {
    const q = new EventQueue();
    expect(q.pop()).toBe(false);
    expect(q.peekTime()).toBe(Number.POSITIVE_INFINITY);
    expect(() => q.push(Number.NaN, 0, 0, 0)).toThrow(/NaN/);
  });
});
