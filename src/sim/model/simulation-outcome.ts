/**
 * What one finished simulation run measured: every pod with its counters and per-bucket
 * requests, the measured window, when the scenario's changes started and settled, latency,
 * and the run's request, connection and event counts. The runner turns outcomes of many
 * trials and dataplanes into a report.
 */
import type { LatencyHistogram } from '../metrics/latency-histogram.js';
import type { SimPod } from './sim-pod.js';

/** What a finished run measured. */
export interface SimulationOutcome {
  /** Every pod that existed, in creation order. */
  readonly pods: readonly SimPod[];
  readonly windowStartMs: number;
  readonly windowEndMs: number;
  /** When the last scale-out or rolling update finished (0 without any). */
  readonly settledAtMs: number;
  /** When the first scale-out or rolling update started, if any. */
  readonly changeAtMs: number | undefined;
  readonly bucketMs: number;
  /** Latency of requests sent inside the window (send to response). */
  readonly latency: LatencyHistogram;
  readonly requestsSent: number;
  readonly requestsFailed: number;
  /** Requests delivered inside the window. */
  readonly windowRequests: number;
  /** Of those, requests delivered to a pod already removed from the endpoints (terminating). */
  readonly windowRequestsToRemovedPods: number;
  /** Of those, requests from a client in another zone than the pod (0 without zones). */
  readonly windowRequestsCrossZone: number;
  readonly connectionsOpened: number;
  /** Connections dialled inside the window: reconnects (connection and pool dataplanes). */
  readonly connectionsOpenedInWindow: number;
  /** Load probes the dataplane sent (`SimulationContext.probeSent`), in all and inside the window. */
  readonly probesSent: number;
  readonly windowProbesSent: number;
  readonly events: number;
}
