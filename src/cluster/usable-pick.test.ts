/**
 * `pickUsable`: the balancer's picker decides among the endpoints a transport can use now —
 * its own pick when usable, the picker asked again without it, then the first usable endpoint
 * of its list (moving on each time); nothing it does not list, `undefined` when it lists none
 * usable, its `none` when it lists nothing.
 */
import { describe, expect, test } from 'vitest';
import { Balancer } from '../balancing/balancer.js';
import { hashKey, type NonePicked } from '../balancing/picker.js';
import { ManualClock } from '../core/clock.js';
import type { Endpoint } from '../core/endpoint.js';
import { EndpointSet } from '../core/endpoint-set.js';
import { SeededRandom } from '../core/random.js';
import { pickUsable } from './usable-pick.js';

const [A, B, C] = ['10.0.0.1:80', '10.0.0.2:80', '10.0.0.3:80'] as const;
const KEYS: string[] = [A, B, C];

function balancer(policy: string, ejected: string[] = []): Balancer {
  const b = new Balancer({ policy, clock: new ManualClock(), random: new SeededRandom(4) });
  b.update(EndpointSet.from(KEYS.map((_key, i) => ({ address: `10.0.0.${i + 1}`, port: 80 }))));
  if (ejected.length > 0) b.setEjected(new Set(ejected));
  return b;
}

const keyOf = (r: Endpoint | NonePicked | undefined) =>
  r === undefined ? 'unusable' : 'type' in r ? `none ${r.reason}` : r.key;

describe('pickUsable', () => {
  const cases: { name: string; usable: string[]; ejected?: string[]; expected: string[] }[] = [
    { name: 'everything usable: the policy decides', usable: KEYS, expected: [A, B, C, A] },
    {
      name: 'one not usable: never picked, the others take turns',
      usable: [A, C],
      expected: [A, C, A, C],
    },
    { name: 'one usable: always it', usable: [B], expected: [B, B, B, B] },
    { name: 'none usable: wait', usable: [], expected: ['unusable', 'unusable', 'unusable', 'unusable'] },
    {
      name: 'a usable but ejected endpoint is never picked',
      usable: [A],
      ejected: [A],
      expected: ['unusable', 'unusable', 'unusable', 'unusable'],
    },
  ];
  for (const c of cases) {
    test(`round-robin, ${c.name}`, () => {
      const b = balancer('round-robin', c.ejected);
      const usable = new Set(c.usable);
      const rotation = { next: 0 };
      const got = c.expected.map(() => keyOf(pickUsable(b.picker, {}, (k) => usable.has(k), rotation)));
      expect(got).toEqual(c.expected);
    });
  }

  test("a hash policy keeps the key's endpoint when usable; otherwise the picker's choice without it", () => {
    const b = balancer('ring-hash');
    const hash = hashKey('user-7');
    const own = keyOf((b.picker.pick({ hash }) as { endpoint: Endpoint }).endpoint);
    expect(keyOf(pickUsable(b.picker, { hash }, () => true, { next: 0 }))).toBe(own);
    const others = KEYS.filter((k) => k !== own);
    const instead = keyOf(pickUsable(b.picker, { hash }, (k) => k !== own, { next: 0 }));
    expect(others).toContain(instead);
    // Asked again with the same key and the same usable set: the same endpoint (affinity kept).
    expect(keyOf(pickUsable(b.picker, { hash }, (k) => k !== own, { next: 0 }))).toBe(instead);
  });

  test('when the policy keeps choosing unusable endpoints, the first usable one of its list, moving on', () => {
    const b = balancer('ring-hash');
    const hash = hashKey('user-7');
    const rotation = { next: 0 };
    const usable = new Set(KEYS);
    // Only endpoints the policy does not reach for this key within its re-picks are usable.
    const first = keyOf(pickUsable(b.picker, { hash }, () => true, { next: 0 }));
    usable.delete(first);
    const second = keyOf(pickUsable(b.picker, { hash }, (k) => usable.has(k), { next: 0 }));
    usable.delete(second);
    const last = [...usable][0] as string;
    expect(keyOf(pickUsable(b.picker, { hash }, (k) => usable.has(k), rotation))).toBe(last);
    expect(rotation.next).toBe(KEYS.indexOf(last) + 1);
  });

  test('an empty picker answers with its reason', () => {
    const b = new Balancer({ policy: 'round-robin', clock: new ManualClock() });
    expect(keyOf(pickUsable(b.picker, {}, () => true, { next: 0 }))).toBe('none no-endpoints');
  });
});
