import { describe, expect, it } from 'vitest';
import { isEvenlbError } from '../../core/errors.js';
import { builtinScenarios } from './builtin-scenarios.js';
import { applyKnobs } from './scenario-knobs.js';
import { isDeploymentChange, parseScenario, resolveIntOrPercent } from './scenario-spec.js';

const minimal = { name: 'x', pods: { count: 4 }, clients: { connections: 8 }, measure: { windowMs: 1000 } };

function errorOf(raw: unknown): string {
  try {
    parseScenario(raw, 'test.yaml');
  } catch (err) {
    expect(isEvenlbError(err)).toBe(true);
    return (err as Error).message;
  }
  throw new Error('expected a validation error');
}

describe('parseScenario', () => {
  it('fills defaults', () => {
    const s = parseScenario(minimal, 'x');
    expect(s.pods.workers).toBe(8);
    expect(s.pods.serviceTime).toEqual({ type: 'exponential', meanMs: 5 });
    expect(s.clients.count).toBeUndefined();
    expect(s.clients.arrival).toEqual({ type: 'poisson', ratePerSecond: 100, count: undefined });
    expect(s.clients.lifetime.ageJitter).toBe(0.1);
    expect(s.measure.from).toBe('start');
    expect(s.events).toEqual([]);
  });

  it('reads capacity factors, pauses, noisy neighbours and slowdown events; a slowdown is no deployment change', () => {
    const s = parseScenario(
      {
        ...minimal,
        pods: {
          count: 4,
          speedDistribution: { type: 'lognormal' },
          pauses: { interval: { type: 'exponential', meanMs: 10_000 }, duration: { type: 'fixed', valueMs: 50 } },
          noisyNeighbours: {
            interval: { type: 'exponential', meanMs: 60_000 },
            duration: { type: 'fixed', valueMs: 5000 },
            factor: 2,
          },
        },
        events: [{ type: 'slowdown', atMs: 100, durationMs: 1000, pod: 3, factor: 3 }],
      },
      'x',
    );
    expect(s.pods.speedDistribution).toEqual({ type: 'lognormal', mean: 1, sigma: 0.25 });
    expect(s.pods.pauses?.duration).toEqual({ type: 'fixed', valueMs: 50 });
    expect(s.pods.noisyNeighbours?.factor).toBe(2);
    expect(s.server.loadWindowMs).toBe(1000);
    expect((s.events ?? []).map(isDeploymentChange)).toEqual([false]);
  });

  it('accepts every built-in scenario', () => {
    for (const b of builtinScenarios) expect(parseScenario(b.raw(), b.name).name).toBe(b.name);
  });

  const cases: { raw: unknown; message: RegExp }[] = [
    {
      raw: { ...minimal, pods: { count: 0 } },
      message: /option "pods\.count" must be an integer between 1 and 100000; received 0/,
    },
    { raw: { ...minimal, pods: { count: 4, colour: 'red' } }, message: /unknown option "pods\.colour"/ },
    {
      raw: {
        ...minimal,
        events: [
          { type: 'scale', atMs: 1, pods: 8 },
          { type: 'rolling-update', atMs: 5, maxSurge: 'lots' },
        ],
      },
      message: /option "events\[1\]\.maxSurge" must be an integer >= 0 or a percentage like "25%"; received "lots"/,
    },
    {
      raw: { ...minimal, events: [{ type: 'explode', atMs: 1 }] },
      message:
        /option "events\[0\]\.type" must be one of "scale", "rolling-update", "burst", "slowdown"; received "explode"/,
    },
    {
      raw: { ...minimal, pods: { count: 2, serviceTime: { type: 'pareto', meanMs: 5, shape: 1 } } },
      message: /option "pods\.serviceTime\.shape" must be a finite number > 1; received 1/,
    },
    {
      raw: { ...minimal, clients: { connections: 8, lifetime: { maxConnectionAgeMs: -1 } } },
      message: /option "clients\.lifetime\.maxConnectionAgeMs" must be a finite number > 0/,
    },
    {
      raw: { ...minimal, clients: { connections: 4, count: 5 } },
      message: /option "clients\.count" must be <= clients\.connections \(4\); received 5/,
    },
    { raw: { ...minimal, measure: {} }, message: /option "measure\.windowMs" must be set when arrivals never stop/ },
    {
      raw: { ...minimal, measure: { from: 'later', windowMs: 5 } },
      message: /option "measure\.from" must be a number >= 0 or one of "start", "settled"; received "later"/,
    },
    {
      raw: { ...minimal, events: [{ type: 'rolling-update', atMs: 0, maxSurge: '0%', maxUnavailable: 0 }] },
      message: /option "events\[0\]\.maxUnavailable" must be not 0 when maxSurge is 0/,
    },
    {
      raw: { ...minimal, pods: { count: 2, serviceTime: { type: 'uniform', minMs: 5, maxMs: 1 } } },
      message: /pods\.serviceTime\.maxMs/,
    },
    {
      raw: { ...minimal, events: [{ type: 'slowdown', atMs: 0, durationMs: 1000, pod: 4, factor: 3 }] },
      message: /option "events\[0\]\.pod" must be the index of an initial pod \(< pods\.count, 4\); received 4/,
    },
    {
      raw: { ...minimal, events: [{ type: 'slowdown', atMs: 0, durationMs: 1000, pod: 0, factor: 0.5 }] },
      message: /option "events\[0\]\.factor" must be a finite number >= 1; received 0\.5/,
    },
    {
      raw: {
        ...minimal,
        pods: { count: 4, speeds: [1, 0.5], speedDistribution: { type: 'uniform', min: 0.5, max: 1 } },
      },
      message: /option "pods\.speedDistribution" must be unset when pods\.speeds is set/,
    },
    {
      raw: { ...minimal, pods: { count: 4, speedDistribution: { type: 'uniform', min: 2, max: 1 } } },
      message: /option "pods\.speedDistribution\.max" must be >= min \(2\); received 1/,
    },
    {
      raw: { ...minimal, pods: { count: 4, speedDistribution: { type: 'gaussian' } } },
      message: /option "pods\.speedDistribution\.type" must be one of "uniform", "lognormal"; received "gaussian"/,
    },
    {
      raw: {
        ...minimal,
        pods: {
          count: 4,
          pauses: { interval: { type: 'fixed', valueMs: 0 }, duration: { type: 'fixed', valueMs: 5 } },
        },
      },
      message: /option "pods\.pauses\.interval" must be a distribution with a mean > 0/,
    },
    {
      raw: { ...minimal, pods: { count: 4, pauses: { interval: { type: 'fixed', valueMs: 1000 } } } },
      message: /option "pods\.pauses\.duration" must be an object with "type" one of/,
    },
    {
      raw: {
        ...minimal,
        pods: {
          count: 4,
          noisyNeighbours: {
            interval: { type: 'exponential', meanMs: 1000 },
            duration: { type: 'fixed', valueMs: 5 },
            factor: 0,
          },
        },
      },
      message: /option "pods\.noisyNeighbours\.factor" must be a finite number >= 1; received 0/,
    },
    {
      raw: { pods: { count: 1 }, clients: { connections: 1 } },
      message: /option "name" must be a non-empty string \(required\)/,
    },
  ];
  for (const c of cases) {
    it(`rejects with a message naming the field: ${c.message.source.slice(0, 60)}`, () => {
      const message = errorOf(c.raw);
      expect(message).toMatch(/^scenario test\.yaml: /);
      expect(message).toMatch(c.message);
    });
  }
});

describe('applyKnobs', () => {
  it('patches a copy, shrinking clients with connections', () => {
    const raw = builtinScenarios.find((b) => b.name === 'steady')?.raw() as Record<string, unknown>;
    const patched = applyKnobs(raw, { pods: 9, connections: 4, maxConnectionAgeMs: 1000 }) as typeof raw;
    const s = parseScenario(patched, 'steady');
    expect(s.pods.count).toBe(9);
    expect(s.clients.connections).toBe(4);
    expect(s.clients.count).toBe(4);
    expect(s.clients.lifetime.maxConnectionAgeMs).toBe(1000);
    expect((raw.pods as { count: number }).count).toBe(4);
  });

  it('refuses knobs with nothing to patch', () => {
    const raw = builtinScenarios.find((b) => b.name === 'steady')?.raw();
    expect(() => applyKnobs(raw, { scaleTo: 8 })).toThrow(/--scale-to does not apply: the scenario has no scale event/);
    expect(() => applyKnobs(raw, { maxSurge: 1 })).toThrow(/--max-surge does not apply/);
  });
});

describe('resolveIntOrPercent', () => {
  it('rounds surge up and unavailable down, as the Deployment controller', () => {
    expect(resolveIntOrPercent('25%', 10, true)).toBe(3);
    expect(resolveIntOrPercent('25%', 10, false)).toBe(2);
    expect(resolveIntOrPercent('25%', 4, true)).toBe(1);
    expect(resolveIntOrPercent(2, 4, false)).toBe(2);
  });
});
