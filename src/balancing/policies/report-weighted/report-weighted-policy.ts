/**
 * `report-weighted`: weighted round robin (earliest deadline first, as `weighted-round-robin`)
 * over weights the endpoints' own load reports give — gRFC A58, Envoy's
 * `client_side_weighted_round_robin` and grpc-js's `weighted_round_robin`: weight =
 * `qps / (utilization + eps / qps × errorUtilizationPenalty)`, a blackout for endpoints whose
 * reports are new, expiry for stale ones (they fall back to the mean weight). See
 * `report-weights.ts` for the arithmetic.
 *
 * `pick()` reads no report and no clock: the `Balancer` asks the policy for its weights when it
 * plans (`BalancingPolicy.reportedWeights`), recomputing them at most every
 * `weightUpdatePeriodMs` on its refresh tick, and publishes a new picker only when a weight moved
 * by more than 0.1%; the EDF schedule keeps each endpoint's phase across those rebuilds. Reports
 * arrive through `EndpointLoad.report()` — the transports parse `endpoint-load-metrics` for
 * policies listing `reports` in `loadSignals`.
 *
 * Differences from Envoy/A58: the reported weight multiplies the endpoint's own weight and goes
 * through the same shaping as every weight (slow start, zone preference, pushback penalty);
 * weights are bounded to `maxWeightRatio` around the mean (evenlb's guard against one absurd
 * report); when every endpoint is in its blackout (a start) the reports count at once instead
 * of equal weights — a fleet starting with a slow pod would otherwise overload it for the whole
 * blackout; the blackout starts at the first usable report this balancer saw when it re-planned
 * (up to one update period late, so never shorter); a report with qps or utilization 0 still
 * refreshes the report's age; out-of-band reporting is not used (reports ride on responses).
 */
import { opt, type Parsed, parseOptions } from '../../../core/options.js';
import type { BalancingPolicy } from '../../policy.js';
import { WeightedRoundRobinBuilder } from '../weighted-round-robin/weighted-round-robin-policy.js';
import { ReportWeights } from './report-weights.js';

const spec = {
  /** How long an endpoint's reports must have been usable before its weight counts, ms; default 10,000 (A58). */
  blackoutPeriodMs: opt.number({ min: 0, default: 10_000 }),
  /** A weight whose latest report is older than this is dropped (the endpoint takes the mean), ms; default 180,000 (A58). */
  weightExpirationPeriodMs: opt.number({ min: 0, exclusiveMin: true, default: 180_000 }),
  /** How often weights are recomputed, ms; default 1,000 (A58); at least 100. */
  weightUpdatePeriodMs: opt.number({ min: 100, default: 1_000 }),
  /** Weight of errors per second against utilization (A58's `error_utilization_penalty`); default 1. */
  errorUtilizationPenalty: opt.number({ min: 0, default: 1 }),
  /** Bound of any weight around the mean, both ways (evenlb's, not A58's); default 10. */
  maxWeightRatio: opt.number({ min: 1, default: 10 }),
};

export type ReportWeightedOptions = Parsed<typeof spec>;

export const reportWeightedPolicy: BalancingPolicy<ReportWeightedOptions> = {
  name: 'report-weighted',
  description:
    'weighted round robin by load reports: qps / (utilization + eps/qps × penalty), as gRFC A58 / Envoy CSWRR',
  kind: 'load',
  loadSignals: ['reports'],
  parseOptions: (input) => parseOptions('report-weighted policy', input, spec),
  reportedWeights: (options) => new ReportWeights(options),
  create: (_options, env) => new WeightedRoundRobinBuilder(env),
};
