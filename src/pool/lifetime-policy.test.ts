import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../core/errors.js';
import { SeededRandom } from '../core/random.js';
import { type ConnectionLife, LifetimePolicy } from './lifetime-policy.js';

const life = (over: Partial<ConnectionLife> = {}): ConnectionLife => ({
  openedAtMs: 0,
  maxAgeMs: undefined,
  requests: 0,
  inFlight: 0,
  idleSinceMs: 0,
  ...over,
});

describe('LifetimePolicy', () => {
  it.each([1, 2, 10, 1000])('lets a connection carry exactly %d requests, then retires it', (n) => {
    const policy = new LifetimePolicy({ maxRequestsPerConnection: n }, new SeededRandom(1));
    let carried = 0;
    // Dispatch loop: ask before each request, count it, mark the last one.
    for (let requests = 0; requests < n + 5; requests++) {
      const verdict = policy.canCarryAnother(life({ requests }), 0);
      if (verdict.type === 'retire') {
        expect(verdict.reason).toBe('requests');
        break;
      }
      carried++;
      expect(policy.isLastRequest(requests + 1)).toBe(requests + 1 === n);
    }
    expect(carried).toBe(n);
  });

  it('draws each connection its own age limit within ±ageJitter, spread over the whole band', () => {
    const policy = new LifetimePolicy({ maxConnectionAgeMs: 60_000, ageJitter: 0.2 }, new SeededRandom(2));
    const draws = Array.from({ length: 10_000 }, () => policy.drawMaxAgeMs()!);
    const min = Math.min(...draws);
    const max = Math.max(...draws);
    expect(min).toBeGreaterThanOrEqual(48_000);
    expect(max).toBeLessThanOrEqual(72_000);
    expect(min).toBeLessThan(48_500);
    expect(max).toBeGreaterThan(71_500);
    const mean = draws.reduce((a, b) => a + b, 0) / draws.length;
    expect(Math.abs(mean / 60_000 - 1)).toBeLessThan(0.01);
  });

  it('uses ±10% jitter by default and none when ageJitter is 0', () => {
    const byDefault = new LifetimePolicy({ maxConnectionAgeMs: 1000 }, new SeededRandom(3));
    for (let i = 0; i < 1000; i++) {
      const d = byDefault.drawMaxAgeMs()!;
      expect(d >= 900 && d <= 1100).toBe(true);
    }
    const exact = new LifetimePolicy({ maxConnectionAgeMs: 1000, ageJitter: 0 }, new SeededRandom(3));
    expect(exact.drawMaxAgeMs()).toBe(1000);
    expect(new LifetimePolicy({}, new SeededRandom(3)).drawMaxAgeMs()).toBeUndefined();
  });

  it('retires a connection at its own age limit', () => {
    const policy = new LifetimePolicy({ maxConnectionAgeMs: 1000 }, new SeededRandom(4));
    const c = life({ openedAtMs: 500, maxAgeMs: 1050 });
    expect(policy.canCarryAnother(c, 1549).type).toBe('open');
    expect(policy.canCarryAnother(c, 1550)).toEqual({ type: 'retire', reason: 'age' });
    expect(policy.nextDeadlineInMs(c, 1000)).toBe(550);
  });

  it('closes an idle connection after idleTimeoutMs, never one with requests in flight', () => {
    const policy = new LifetimePolicy({ idleTimeoutMs: 200 }, new SeededRandom(5));
    expect(policy.idleVerdict(life({ idleSinceMs: 100 }), 299).type).toBe('open');
    expect(policy.idleVerdict(life({ idleSinceMs: 100 }), 300)).toEqual({ type: 'retire', reason: 'idle' });
    expect(policy.idleVerdict(life({ idleSinceMs: 0, inFlight: 1 }), 10_000).type).toBe('open');
    expect(policy.canCarryAnother(life({ idleSinceMs: 0, inFlight: 1 }), 10_000).type).toBe('open');
  });

  it('retires an idle connection that has used up its requests', () => {
    const policy = new LifetimePolicy({ maxRequestsPerConnection: 3 }, new SeededRandom(6));
    expect(policy.idleVerdict(life({ requests: 3 }), 0)).toEqual({ type: 'retire', reason: 'requests' });
  });

  it('reports the nearest deadline: age, or idle while idle', () => {
    const policy = new LifetimePolicy({ maxConnectionAgeMs: 1000, idleTimeoutMs: 300 }, new SeededRandom(7));
    const c = life({ openedAtMs: 0, maxAgeMs: 1000, idleSinceMs: 900 });
    expect(policy.nextDeadlineInMs(c, 950)).toBe(50); // age at 1000 before idle at 1200
    expect(policy.nextDeadlineInMs({ ...c, idleSinceMs: 100 }, 200)).toBe(200); // idle at 400
    expect(policy.nextDeadlineInMs({ ...c, idleSinceMs: 100, inFlight: 2 }, 200)).toBe(800); // busy: age only
    expect(policy.nextDeadlineInMs(c, 5000)).toBe(0); // overdue
    expect(
      new LifetimePolicy({}, new SeededRandom(7)).nextDeadlineInMs({ ...c, maxAgeMs: undefined }, 0),
    ).toBeUndefined();
  });

  it('is unlimited only with no limit set', () => {
    expect(new LifetimePolicy(undefined, new SeededRandom(1)).unlimited).toBe(true);
    expect(new LifetimePolicy({ ageJitter: 0.3 }, new SeededRandom(1)).unlimited).toBe(true);
    expect(new LifetimePolicy({ idleTimeoutMs: 5 }, new SeededRandom(1)).unlimited).toBe(false);
  });

  it('returns shared verdict objects (no allocation per check)', () => {
    const policy = new LifetimePolicy({ maxRequestsPerConnection: 1 }, new SeededRandom(1));
    expect(policy.canCarryAnother(life(), 0)).toBe(policy.canCarryAnother(life(), 1));
    expect(policy.canCarryAnother(life({ requests: 1 }), 0)).toBe(policy.canCarryAnother(life({ requests: 5 }), 0));
  });

  const invalid: { input: unknown; message: string }[] = [
    {
      input: { maxRequestsPerConnection: 0 },
      message: 'option "maxRequestsPerConnection" must be an integer >= 1; received 0',
    },
    {
      input: { maxConnectionAgeMs: 0 },
      message: 'option "maxConnectionAgeMs" must be a finite number > 0; received 0',
    },
    { input: { ageJitter: 0.6 }, message: 'option "ageJitter" must be a finite number >= 0 <= 0.5; received 0.6' },
    { input: { idleTimeoutMs: -1 }, message: 'option "idleTimeoutMs" must be a finite number > 0; received -1' },
    { input: { maxAgeMs: 5 }, message: 'unknown option "maxAgeMs"' },
  ];
  it.each(invalid)('rejects $input naming the component', ({ input, message }) => {
    expect(() => new LifetimePolicy(input, new SeededRandom(1), 'server recycler')).toThrow(
      expect.objectContaining({
        code: ErrorCodes.INVALID_OPTION,
        message: expect.stringContaining(`server recycler: ${message}`),
      }),
    );
  });
});
