/**
 * `evenlb sim`: a discrete-event simulator of how a Service's load spreads over its pods
 * through kube-proxy's modes, the apiserver's webhook clients and evenlb's own balancers —
 * the production pickers and lifetime policy, on a virtual clock with seeded randomness.
 * This entry point is for the CLI and benchmarks; nothing else in evenlb imports the
 * simulator.
 */
export type { DataplaneGranularity, DataplaneModel, RequestRouter } from './dataplane/dataplane.js';
export { listDataplanes, resolveDataplanes } from './dataplane/registry.js';
export { EventQueue } from './engine/event-queue.js';
export { type EventHandler, Scheduler } from './engine/scheduler.js';
export { VirtualClock } from './engine/virtual-clock.js';
export { LatencyHistogram } from './metrics/latency-histogram.js';
export { Simulation, type SimulationInit } from './model/simulation.js';
export type { SimulationOutcome } from './model/simulation-outcome.js';
export type * from './report/sim-report.js';
export { type ProgressStatus, type RunOptions, runScenario } from './run-simulation.js';
export {
  type BuiltinScenario,
  builtinScenarios,
  findBuiltinScenario,
  parseBuiltinScenario,
} from './scenario/builtin-scenarios.js';
export { applyKnobs, type ScenarioKnobs } from './scenario/scenario-knobs.js';
export { parseScenario, resolveIntOrPercent, type Scenario, type ScenarioEvent } from './scenario/scenario-spec.js';
export { createSampler, type DistributionSpec, type Sampler } from './workload/distribution.js';
