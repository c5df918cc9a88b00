import { describe, expect, it } from 'vitest';
import type { EndpointInput } from './endpoint.js';
import { EndpointSet } from './endpoint-set.js';

const ep = (last: number, extra: Partial<EndpointInput> = {}): EndpointInput => ({
  address: `10.0.0.${last}`,
  port: 80,
  ...extra,
});
const notReady = { conditions: { ready: false } };
const terminating = { conditions: { ready: false, serving: true, terminating: true } };
const stopped = { conditions: { ready: false, serving: false, terminating: true } };

describe('EndpointSet', () => {
  it('keeps first-occurrence order; a later duplicate key replaces the earlier endpoint', () => {
    const set = EndpointSet.from([ep(2), ep(1), ep(2, { weight: 5 })]);
    expect(set.endpoints.map((e) => e.key)).toEqual(['10.0.0.2:80', '10.0.0.1:80']);
    expect(set.get('10.0.0.2:80')?.weight).toBe(5);
    expect(set.size).toBe(2);
    expect(set.has('10.0.0.1:80')).toBe(true);
    expect(set.has('10.0.0.3:80')).toBe(false);
    expect(Object.isFrozen(set.endpoints)).toBe(true);
  });

  const eligibleCases: { name: string; inputs: EndpointInput[]; eligible: number[] }[] = [
    { name: 'empty', inputs: [], eligible: [] },
    { name: 'all ready', inputs: [ep(1), ep(2)], eligible: [1, 2] },
    { name: 'ready ones only', inputs: [ep(1), ep(2, notReady), ep(3, terminating)], eligible: [1] },
    {
      name: 'none ready: serving-and-terminating fallback',
      inputs: [ep(1, notReady), ep(2, terminating)],
      eligible: [2],
    },
    { name: 'none ready, none serving', inputs: [ep(1, notReady), ep(2, stopped)], eligible: [] },
    {
      name: 'not ready but serving and not terminating is no fallback',
      inputs: [ep(1, { conditions: { ready: false, serving: true } })],
      eligible: [],
    },
  ];
  it.each(eligibleCases)('eligible(): $name', ({ inputs, eligible }) => {
    const set = EndpointSet.from(inputs);
    expect(set.eligible().map((e) => Number(e.address.split('.')[3]))).toEqual(eligible);
    expect(set.eligible()).toBe(set.eligible()); // computed once
  });

  it('diffs by key: added, removed and changed', () => {
    const prev = EndpointSet.from([ep(1), ep(2), ep(3)]);
    const next = EndpointSet.from([ep(2), ep(3, notReady), ep(4)]);
    const d = EndpointSet.diff(prev, next);
    expect(d.added.map((e) => e.key)).toEqual(['10.0.0.4:80']);
    expect(d.removed.map((e) => e.key)).toEqual(['10.0.0.1:80']);
    expect(d.changed.map(([a, b]) => [a.conditions.ready, b.conditions.ready])).toEqual([[true, false]]);
    expect(EndpointSet.diff(EndpointSet.EMPTY, prev).added).toHaveLength(3);
    expect(EndpointSet.diff(prev, EndpointSet.EMPTY).removed).toHaveLength(3);
  });

  it('equals ignores order but not attributes', () => {
    const a = EndpointSet.from([ep(1), ep(2)]);
    expect(a.equals(EndpointSet.from([ep(2), ep(1)]))).toBe(true);
    expect(a.equals(EndpointSet.from([ep(1), ep(2, { weight: 2 })]))).toBe(false);
    expect(a.equals(EndpointSet.from([ep(1)]))).toBe(false);
    expect(EndpointSet.EMPTY.equals(EndpointSet.from([]))).toBe(true);
  });
});
