/** Helpers for the simulator tests: run a built-in scenario with knobs and pick results apart. */
import type { DataplaneModel } from '../../src/sim/dataplane/dataplane.js';
import { PerRequestRouter, type RequestPicker } from '../../src/sim/dataplane/per-request-router.js';
import { resolveDataplanes } from '../../src/sim/dataplane/registry.js';
import type { SimulationContext } from '../../src/sim/model/simulation-context.js';
import type { SimDataplaneResult, SimReport } from '../../src/sim/report/sim-report.js';
import { runScenario } from '../../src/sim/run-simulation.js';
import { findBuiltinScenario, parseBuiltinScenario } from '../../src/sim/scenario/builtin-scenarios.js';
import type { ScenarioKnobs } from '../../src/sim/scenario/scenario-knobs.js';
import { parseScenario } from '../../src/sim/scenario/scenario-spec.js';

export function runBuiltin(
  name: string,
  dataplanes: readonly string[],
  knobs: ScenarioKnobs = {},
  seed = 1,
): SimReport {
  const builtin = findBuiltinScenario(name);
  if (builtin === undefined) throw new Error(`no built-in scenario ${name}`);
  const scenario = parseBuiltinScenario(builtin, knobs);
  return runScenario({ scenario, dataplanes: resolveDataplanes(dataplanes), seed });
}

export function runRaw(raw: unknown, dataplanes: readonly string[], seed = 1): SimReport {
  return runScenario({ scenario: parseScenario(raw, 'test'), dataplanes: resolveDataplanes(dataplanes), seed });
}

export function result(report: SimReport, dataplane: string): SimDataplaneResult {
  const r = report.results.find((x) => x.dataplane === dataplane);
  if (r === undefined) throw new Error(`no result for ${dataplane}`);
  return r;
}

/** Measured pods' load as a multiple of the mean, in creation order. */
export function overMeans(r: SimDataplaneResult): number[] {
  return r.pods.filter((p) => p.measured).map((p) => p.overMean);
}

/** A test dataplane routing every request through `picker` (one per run), as the evenlb ones do. */
export function requestDataplane(
  name: string,
  description: string,
  picker: (ctx: SimulationContext) => RequestPicker,
): DataplaneModel {
  return {
    name,
    description,
    granularity: 'request',
    policyKind: undefined,
    createRouter: (ctx) => new PerRequestRouter(ctx, picker(ctx)),
  };
}
