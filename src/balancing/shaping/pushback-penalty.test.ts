import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../core/clock.js';
import { EndpointSet } from '../../core/endpoint-set.js';
import { ErrorCodes } from '../../core/errors.js';
import { SeededRandom } from '../../core/random.js';
import { Balancer, type BalancerOptions } from '../balancer.js';
import { endpointInputs } from '../testing/fixtures.js';
import { parsePushbackOptions, pushbackMultiplier } from './pushback-penalty.js';

/**
 * Open loop on virtual time: a request every `gapMs`, answered in `serviceMs`. Endpoint 0
 * answers every other request with a pushback (429, at once) from 0 until `stopMs`, then
 * serves normally. Returns each endpoint's picks per phase — while it pushes back (from 1 s
 * on), and from one window after it stopped to the end — and per second.
 */
function run(
  policy: string,
  options: Partial<BalancerOptions> = {},
  { stopMs = 20_000, endMs = 40_000, windowMs = 5_000, gapMs = 1, serviceMs = 4 } = {},
): { during: number[]; after: number[]; perSecond: number[][] } {
  const clock = new ManualClock();
  const b = new Balancer({ policy, clock, random: new SeededRandom(9), ...options });
  b.update(EndpointSet.from(endpointInputs(4)));
  const keys = b.endpointSet.endpoints.map((e) => e.key);
  const during = [0, 0, 0, 0];
  const after = [0, 0, 0, 0];
  const perSecond: number[][] = [];
  let flip = 0;
  const context = { hash: 0 };
  const random = new SeededRandom(4);
  for (let t = 0; t < endMs; t += gapMs) {
    clock.advance(gapMs);
    context.hash = random.int(2 ** 31);
    const r = b.picker.pick(context);
    if (r.type !== 'picked') throw new Error('no endpoint');
    const i = keys.indexOf(r.endpoint.key);
    if (t >= 1000 && t < stopMs) during[i]!++;
    if (t >= stopMs + windowMs) after[i]!++;
    const second = Math.floor(t / 1000);
    perSecond[second] ??= [0, 0, 0, 0];
    perSecond[second]![i]!++;
    const started = r.load.start();
    if (i === 0 && t < stopMs && flip++ % 2 === 0) {
      r.load.pushback();
      r.load.end(started, false);
    } else {
      clock.setTimeout(() => r.load.end(started, true), serviceMs);
    }
  }
  b.close();
  return { during, after, perSecond };
}

const share = (counts: number[], i: number): number => counts[i]! / counts.reduce((a, c) => a + c, 0);

describe('pushback penalty', () => {
  it.each([
    { sinceMs: Number.NaN, expected: 1 },
    { sinceMs: 0, expected: 0.1 },
    { sinceMs: 2500, expected: 1 / 5.5 },
    { sinceMs: 4999, expected: 1 / (1 + 9 / 5000) },
    { sinceMs: 5000, expected: 1 },
    { sinceMs: 60_000, expected: 1 },
  ])('multiplies weight by $expected, $sinceMs ms after the latest pushback', ({ sinceMs, expected }) => {
    expect(pushbackMultiplier(sinceMs, { windowMs: 5000, factor: 10 })).toBeCloseTo(expected, 12);
  });

  it('parses defaults, false, and rejects a factor below 1 naming the field', () => {
    expect(parsePushbackOptions(undefined)).toEqual({ windowMs: 5000, factor: 10 });
    expect(parsePushbackOptions(false)).toBe(false);
    expect(() => new Balancer({ pushback: { factor: 0.5 } })).toThrow(
      expect.objectContaining({
        code: ErrorCodes.INVALID_OPTION,
        message: 'Balancer pushback: option "factor" must be a finite number >= 1; received 0.5',
      }),
    );
  });

  const loadPolicies = [
    'round-robin',
    'random',
    'weighted-round-robin',
    'least-request',
    'peak-ewma',
    'report-weighted',
  ];
  it.each(loadPolicies)(
    '%s: an endpoint pushing back on half its requests gets < 1/3 of a fair share, and a fair share (±10%) a window after it stops',
    (policy) => {
      const { during, after } = run(policy);
      expect(share(during, 0) / 0.25).toBeLessThan(1 / 3);
      for (let i = 0; i < 4; i++) expect(Math.abs(share(after, i) / 0.25 - 1)).toBeLessThan(0.1);
    },
  );

  it.each(loadPolicies)(
    '%s without the penalty (pushback: false) keeps sending it more than half a fair share',
    (policy) => {
      // The regression the penalty fixes: nothing else steers away from an endpoint that sheds load.
      const { during } = run(policy, { pushback: false });
      expect(share(during, 0) / 0.25).toBeGreaterThan(0.5);
    },
  );

  it('fades: after the pushback stops, the share rises through the window', () => {
    const { perSecond } = run('random');
    // Seconds 20, 22 and 24: 0, 2 and 4 s after the last pushback (multipliers ~0.11, 0.18, 0.53).
    const shares = [20, 22, 24].map((s) => share(perSecond[s]!, 0));
    expect(shares[0]!).toBeLessThan(shares[1]!);
    expect(shares[1]!).toBeLessThan(shares[2]!);
    expect(shares[2]! / 0.25).toBeLessThan(0.9);
  });

  it.each(['ring-hash', 'maglev', 'source-hash'])('%s is not biased: key affinity wins over pushback', (policy) => {
    const withPenalty = run(policy);
    const without = run(policy, { pushback: false });
    expect(withPenalty.during).toEqual(without.during);
  });

  it('re-plans on the first pushback at once, without waiting for a tick', () => {
    const clock = new ManualClock();
    const b = new Balancer({ policy: 'random', clock, random: new SeededRandom(1) });
    b.update(EndpointSet.from(endpointInputs(4)));
    const first = b.picker;
    first.endpoints[0]!.load.pushback();
    expect(b.picker).not.toBe(first);
    expect(b.weights()[0]!.weight).toBeCloseTo(0.1, 12);
    clock.advance(5000);
    expect(b.weights()[0]!.weight).toBe(1);
    b.close();
  });
});
