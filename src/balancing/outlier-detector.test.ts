import { describe, expect, test } from 'vitest';
import { ManualClock } from '../core/clock.js';
import { EndpointSet } from '../core/endpoint-set.js';
import { OutlierDetector } from './outlier-detector.js';

const set = (n: number) =>
  EndpointSet.from(Array.from({ length: n }, (_, i) => ({ address: `10.0.0.${i + 1}`, port: 80 })));

function detector(options: Record<string, unknown>, n = 4) {
  const clock = new ManualClock();
  const changes: string[][] = [];
  const d = new OutlierDetector(options, { clock, onChange: (e) => changes.push([...e].sort()) });
  d.setEndpoints(set(n));
  return { d, clock, changes };
}

describe('OutlierDetector', () => {
  test('ejects after N consecutive failures; a success resets the count', () => {
    const { d, changes } = detector({ consecutiveFailures: 3 });
    d.record('10.0.0.1:80', false);
    d.record('10.0.0.1:80', false);
    d.record('10.0.0.1:80', true);
    d.record('10.0.0.1:80', false);
    d.record('10.0.0.1:80', false);
    expect(d.ejected.size).toBe(0);
    expect(d.record('10.0.0.1:80', false)).toBe(true);
    expect(changes).toEqual([['10.0.0.1:80']]);
  });

  test('ejection lasts base × times ejected, capped at max, then the endpoint returns', () => {
    const { d, clock } = detector({ consecutiveFailures: 1, baseEjectionMs: 100, maxEjectionMs: 250 });
    const key = '10.0.0.2:80';
    const cases = [
      { nth: 1, lastsMs: 100 },
      { nth: 2, lastsMs: 200 },
      { nth: 3, lastsMs: 250 },
      { nth: 4, lastsMs: 250 },
    ];
    for (const c of cases) {
      d.record(key, false);
      expect(d.state(key).timesEjected).toBe(c.nth);
      clock.advance(c.lastsMs - 1);
      expect(d.ejected.has(key)).toBe(true);
      clock.advance(1);
      expect(d.ejected.has(key)).toBe(false);
    }
  });

  test('a long healthy spell forgives past ejections', () => {
    const { d, clock } = detector({ consecutiveFailures: 1, baseEjectionMs: 100, maxEjectionMs: 300 });
    const key = '10.0.0.3:80';
    d.record(key, false);
    clock.advance(100);
    d.record(key, false);
    expect(d.state(key).timesEjected).toBe(2);
    clock.advance(200 + 300);
    d.record(key, false);
    expect(d.state(key).timesEjected).toBe(1);
  });

  test.each([
    { endpoints: 4, percent: 50, ejectable: 2 },
    { endpoints: 4, percent: 10, ejectable: 0 },
    { endpoints: 3, percent: 50, ejectable: 1 },
    { endpoints: 1, percent: 100, ejectable: 1 },
  ])('never ejects more than $percent% of $endpoints endpoints ($ejectable)', ({ endpoints, percent, ejectable }) => {
    const { d } = detector({ consecutiveFailures: 1, maxEjectionPercent: percent }, endpoints);
    for (let i = 1; i <= endpoints; i++) d.record(`10.0.0.${i}:80`, false);
    expect(d.ejected.size).toBe(ejectable);
  });

  test('removed endpoints are forgotten (and un-ejected)', () => {
    const { d, changes } = detector({ consecutiveFailures: 1 });
    d.record('10.0.0.4:80', false);
    expect(d.ejected.has('10.0.0.4:80')).toBe(true);
    d.setEndpoints(set(3));
    expect(d.ejected.size).toBe(0);
    expect(changes.at(-1)).toEqual([]);
  });

  test('options are validated', () => {
    expect(() => new OutlierDetector({ consecutiveFailures: 0 })).toThrow(/consecutiveFailures/);
    expect(() => new OutlierDetector({ bogus: 1 })).toThrow(/unknown option "bogus"/);
  });
});
