/**
 * What a phase measured, in the shape written to `--json` and embedded in the HTML report.
 * Every figure comes from the pods' own request counters and the clients' own success and
 * failure counts; nothing is estimated.
 */
import { imbalance } from '../metrics/imbalance.js';
import type { PhaseId } from './phases.js';
import type { PodRole } from './pod-process.js';
import type { ClientLatencyMs } from './protocol.js';

export interface PodResult {
  readonly name: string;
  readonly address: string;
  readonly port: number;
  readonly role: PodRole;
  /** Requests the pod served during the phase. */
  readonly requests: number;
  /** Connections the pod accepted during the phase. */
  readonly connections: number;
  /** Its share of the requests in the steady window (initial pods only), 0..1. */
  readonly steadyShare: number | undefined;
  /** Its share of the requests between the scale-out and the rolling restart, 0..1. */
  readonly afterScaleOutShare: number | undefined;
}

/**
 * How hard the clients drove: the request rate asked of them and the rate they sent (requests
 * over the time they were sending; a client sends its next request only after the previous
 * response, so slow answers lower it), and the latencies they saw.
 */
export interface ClientFigures {
  readonly nominalRequestsPerSecond: number;
  readonly sentRequestsPerSecond: number;
  readonly sendingMs: number;
  readonly latencyMs?: ClientLatencyMs;
}

export interface PhaseEvent {
  readonly tMs: number;
  readonly label: string;
}

/** Per-pod request rate over time, for the charts. */
export interface PhaseSeries {
  readonly tMs: readonly number[];
  readonly ratesByPod: Readonly<Record<string, readonly (number | null)[]>>;
}

interface PhaseCommon {
  readonly id: PhaseId;
  readonly title: string;
  readonly explanation: string;
}

export type PhaseResult =
  | (PhaseCommon & { readonly status: 'failed'; readonly reason: string })
  | (PhaseCommon & {
      readonly status: 'ok';
      /** How the clients reached the pods, in words. */
      readonly dataplane: string;
      readonly durationMs: number;
      readonly pods: readonly PodResult[];
      /** Busiest initial pod over the mean, in the steady window. */
      readonly maxOverMean: number;
      readonly cov: number;
      readonly jain: number;
      /** The scaled-out pod's share after the scale-out as a fraction of its fair share (1 = fair). */
      readonly newPodShareOfFair: number;
      readonly okRequests: number;
      readonly failedRequests: number;
      readonly errorsByCode: Readonly<Record<string, number>>;
      readonly clients: ClientFigures;
      readonly events: readonly PhaseEvent[];
      readonly series: PhaseSeries;
      readonly windows: {
        readonly steadyMs: readonly [number, number];
        readonly afterScaleOutMs: readonly [number, number];
      };
    });

export type CompletedPhase = Extract<PhaseResult, { status: 'ok' }>;

/** Counts per pod at a moment of the phase. */
export type CountSnapshot = ReadonlyMap<string, number>;

function delta(from: CountSnapshot, to: CountSnapshot, pod: string): number {
  return Math.max(0, (to.get(pod) ?? 0) - (from.get(pod) ?? 0));
}

/** Shares of each named pod in the window between two snapshots (0 when nothing was served). */
export function windowShares(from: CountSnapshot, to: CountSnapshot, pods: readonly string[]): Map<string, number> {
  const counts = pods.map((p) => delta(from, to, p));
  const total = counts.reduce((a, b) => a + b, 0);
  return new Map(pods.map((p, i) => [p, total === 0 ? 0 : (counts[i] ?? 0) / total]));
}

/** Imbalance of the named pods' request counts between two snapshots. */
export function windowImbalance(from: CountSnapshot, to: CountSnapshot, pods: readonly string[]) {
  return imbalance(pods.map((p) => delta(from, to, p)));
}
