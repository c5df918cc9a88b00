/**
 * Regression guard for the engine: every built-in scenario, shortened, through every
 * dataplane, must give the figures recorded in `golden/summaries.json` for the same seed —
 * captured before the engine grew balancer fleets, discovery lag, zones and the large-scale
 * paths (and, for the evenlb policies, with one shared balancer: M = 1). With one balancer per
 * client, or M = 1, and no discovery lag, nothing about those may change a single number.
 * Fields added to the report later are not compared; the recorded ones must match exactly.
 * Those figures predate the herding guard of least-request / peak-ewma (on by default in the
 * library and so in the simulator's `clients.herdingGuard`), which changes what those policies
 * do after pods are added: they are compared with the guard off, and the default (guard on) has
 * its own recorded figures for the evenlb policies in the scenarios that add pods.
 * `EVENLB_UPDATE_GOLDEN=1` rewrites the file (then `npx biome check --write` it) — only for a
 * deliberate, explained change of the model.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { listDataplanes } from '../../src/sim/dataplane/registry.js';
import type { ScenarioKnobs } from '../../src/sim/scenario/scenario-knobs.js';
import { runBuiltin } from './support.js';

const file = join(dirname(fileURLToPath(import.meta.url)), 'golden', 'summaries.json');

/** Each built-in, short enough that all of them through every dataplane take a few seconds. */
const cases: { scenario: string; knobs: ScenarioKnobs }[] = [
  { scenario: 'steady', knobs: { windowMs: 20_000 } },
  { scenario: 'rolling-update', knobs: { windowMs: 10_000, clients: 40, connections: 400 } },
  { scenario: 'hpa-scale-out', knobs: { windowMs: 20_000, clients: 40, connections: 400 } },
  { scenario: 'heterogeneous-durations', knobs: { windowMs: 30_000, trials: 2 } },
  { scenario: 'webhook-burst', knobs: { windowMs: 30_000 } },
  { scenario: 'random-connections', knobs: { trials: 5, requestsPerClient: 50 } },
];

type Summary = Record<string, unknown>;

/** The engine the recorded figures come from had no herding guard. */
const BEFORE_GUARD: ScenarioKnobs = { herdingGuard: false };
/** Scenarios that add pods, where the guard changes least-request / peak-ewma figures. */
const GUARDED = new Set(['rolling-update', 'hpa-scale-out']);
const evenlb = (name: string) => name.startsWith('evenlb:');

function summarise(scenario: string, knobs: ScenarioKnobs, only?: (name: string) => boolean): Summary {
  const dataplanes = listDataplanes()
    .map((d) => d.name)
    .filter((name) => only === undefined || only(name));
  const report = runBuiltin(scenario, dataplanes, knobs, 7);
  return JSON.parse(
    JSON.stringify({
      window: report.window,
      settledAtMs: report.settledAtMs,
      changeAtMs: report.changeAtMs,
      results: report.results.map(({ description: _d, ...rest }) => rest),
    }),
  ) as Summary;
}

/**
 * `actual` restricted to the keys `golden` has (recursively), so new report fields are ignored —
 * and, in arrays, to the entries it has: dataplanes registered later come last and are compared
 * only once recorded.
 */
function restrict(actual: unknown, golden: unknown): unknown {
  if (Array.isArray(golden) && Array.isArray(actual)) {
    return actual.length < golden.length ? actual : golden.map((g, i) => restrict(actual[i], g));
  }
  if (golden !== null && typeof golden === 'object' && actual !== null && typeof actual === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(golden))
      out[k] = restrict((actual as Record<string, unknown>)[k], (golden as Record<string, unknown>)[k]);
    return out;
  }
  return actual;
}

describe('golden figures of the built-in scenarios (seed 7)', () => {
  if (process.env.EVENLB_UPDATE_GOLDEN === '1') {
    it('records the golden file', () => {
      // Entries recorded from earlier sources (the one-shared-balancer figures) are kept.
      const all = JSON.parse(readFileSync(file, 'utf8')) as Record<string, Summary>;
      for (const c of cases) {
        all[c.scenario] = summarise(c.scenario, { ...c.knobs, ...BEFORE_GUARD });
        if (GUARDED.has(c.scenario)) all[`${c.scenario} (herding guard on)`] = summarise(c.scenario, c.knobs, evenlb);
      }
      writeFileSync(file, `${JSON.stringify(all)}\n`);
    });
    return;
  }
  const golden = JSON.parse(readFileSync(file, 'utf8')) as Record<string, Summary>;
  for (const c of cases) {
    it(`${c.scenario}: the same figures as recorded, for every dataplane`, () => {
      const expected = golden[c.scenario];
      expect(expected, `golden file lacks ${c.scenario}`).toBeDefined();
      const actual = summarise(c.scenario, { ...c.knobs, ...BEFORE_GUARD });
      expect(restrict(actual, expected)).toEqual(expected);
    });
    if (GUARDED.has(c.scenario)) {
      it(`${c.scenario}: with the herding guard on (the default), the recorded figures of every evenlb policy`, () => {
        const expected = golden[`${c.scenario} (herding guard on)`];
        expect(expected, `golden file lacks ${c.scenario} (herding guard on)`).toBeDefined();
        expect(restrict(summarise(c.scenario, c.knobs, evenlb), expected)).toEqual(expected);
      });
    }
    // One balancer (M = 1, no discovery lag): the figures the simulator gave with one shared
    // balancer before fleets existed (recorded from that version's source).
    it(`${c.scenario}: M = 1 balancer gives the figures of the former shared balancer, for every evenlb policy`, () => {
      const expected = golden[`${c.scenario} (one shared balancer)`];
      expect(expected, `golden file lacks ${c.scenario} (one shared balancer)`).toBeDefined();
      for (const knobs of [{ balancers: 1 }, { balancerScope: 'shared' as const }]) {
        const actual = summarise(c.scenario, { ...c.knobs, ...knobs, ...BEFORE_GUARD }, evenlb);
        expect(restrict(actual, expected)).toEqual(expected);
      }
    });
  }
});
