/**
 * Fair-share shedding: a pod closes connections only while its load is above the fleet mean
 * by more than a tolerance. One pure decision shared by the server recycler, the proxy's
 * listeners and the simulator.
 */
export {
  FairShareDecider,
  type FairShareDecision,
  type FairShareHoldReason,
  type FairShareInput,
  nextFairSharePeriodMs,
} from './fair-share-decider.js';
export {
  FAIR_SHARE_LOAD_METRICS,
  type FairShareDecisionOptions,
  type FairShareLoadMetric,
  fairShareDecisionSpec,
  parseFairShareDecision,
  type ResolvedFairShareDecision,
  resolveFairShareDecision,
} from './fair-share-options.js';
export { LoadMeter, type MeteredConnection } from './load-meter.js';
export { PeerLoadTable } from './peer-load-table.js';
