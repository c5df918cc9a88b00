/**
 * The simulator's result, as `evenlb sim --json` prints it (schema in `report-schema.ts` and
 * docs/sim.md). Times are ms of simulated time; shares are fractions of the requests
 * delivered in the measured window; `overMean` is a pod's requests over the mean of the
 * measured pods (1 = its fair share). Nothing in it depends on wall-clock time, so the same
 * seed and inputs give byte-identical JSON.
 */
import type { Scenario } from '../scenario/scenario-spec.js';

export interface SimPodReport {
  readonly name: string;
  readonly address: string;
  readonly revision: number;
  /** Counted in the imbalance figures: the pod was ready when the window closed. */
  readonly measured: boolean;
  /** Fraction of all requests delivered in the window (summed over trials). */
  readonly share: number;
  /** Requests over the mean of the measured pods; 1 is the fair share. */
  readonly overMean: number;
  /** Requests delivered in the window (summed over trials). */
  readonly requests: number;
  readonly createdAtMs: number;
  readonly readyAtMs: number | null;
  readonly removedAtMs: number | null;
  /** Connections open to it when the run ended (last trial); null for per-request dataplanes. */
  readonly openConnections: number | null;
  /** Its zone (`zone-a`, ...); null when the scenario has no zones. */
  readonly zone: string | null;
  readonly latencyMs: { readonly mean: number; readonly p99: number } | null;
  /**
   * Busy worker-time over capacity (workers × time ready) in the window, all trials together
   * (0..1); null when it was never ready in the window.
   */
  readonly utilization: number | null;
}

export interface SimSeries {
  readonly bucketMs: number;
  /** Requests arriving at each pod per bucket, summed over trials; bucket i covers [i·bucketMs, (i+1)·bucketMs). */
  readonly pods: readonly { readonly name: string; readonly requests: readonly number[] }[];
}

export interface SimZoneReport {
  readonly zone: string;
  /** Measured pods in the zone. */
  readonly pods: number;
  /** Fraction of the window's requests its pods received. */
  readonly share: number;
}

/** The new pods' share of each bucket after the first of them became ready, over their fair share. */
export interface SimNewPodsRamp {
  readonly bucketMs: number;
  /** Bucket i: [ready + i·bucketMs, ready + (i+1)·bucketMs), rounded up to whole buckets; 1 = fair share (mean over trials). */
  readonly overFair: readonly number[];
}

export interface TrialSpread {
  readonly mean: number;
  readonly stdev: number;
  readonly min: number;
  readonly max: number;
}

export interface SimDataplaneResult {
  readonly dataplane: string;
  readonly description: string;
  readonly granularity: 'connection' | 'pool' | 'request';
  readonly policyKind: 'load' | 'hash' | null;
  /** Busiest measured pod over the mean (mean over trials). */
  readonly maxOverMean: number;
  /** Coefficient of variation of the measured pods' requests (mean over trials). */
  readonly cov: number;
  /** Jain's fairness index (mean over trials). */
  readonly jain: number;
  /** Spread of max/mean over the trials (null for one trial). */
  readonly maxOverMeanTrials: TrialSpread | null;
  /**
   * Busiest measured pod's utilization over the mean utilization (mean over trials): even load
   * in the sense of capacity, so unequal pods can be compared (1 = every pod equally busy).
   */
  readonly utilizationMaxOverMean: number;
  /** ms from the first new pod becoming ready until the new pods took ≥ 90% of their fair share
   * in a bucket (mean over trials); null: never; absent figure when no pod was added. */
  readonly newPodsFairShareMs: number | null;
  readonly newPods: number;
  readonly latencyMs: {
    readonly mean: number;
    readonly p50: number;
    readonly p99: number;
    /** 99.9th percentile. */
    readonly p999: number;
    readonly max: number;
  } | null;
  readonly requests: {
    readonly sent: number;
    readonly failed: number;
    readonly window: number;
    /** Delivered in the window to pods already removed from the endpoints. */
    readonly toRemovedPods: number;
  };
  readonly connectionsOpened: number;
  /**
   * Load probes the dataplane sent inside the window (summed over trials; 0 for dataplanes that
   * send none) and per request delivered in the window.
   */
  readonly probes: { readonly sent: number; readonly perRequest: number };
  /**
   * Connections dialled inside the measured window per minute of it (mean over trials):
   * reconnects after lifetime limits, recycling, sessions and removed pods. Null for per-request
   * dataplanes (connections are not modelled there: pools are keyed by endpoint).
   */
  readonly reconnectsPerMinute: number | null;
  /** The new pods' share over their fair share, bucket by bucket after ready; null when no pod was added. */
  readonly newPodsOverFair: SimNewPodsRamp | null;
  /** Fraction of the window's requests served in another zone than the client's; null without zones. */
  readonly crossZone: number | null;
  readonly zones: readonly SimZoneReport[] | null;
  readonly events: number;
  readonly pods: readonly SimPodReport[];
  /** Per-pod load over time (absent for multi-trial placement scenarios without a timeline). */
  readonly series: SimSeries | null;
}

export interface SimReport {
  readonly schemaVersion: 1;
  readonly scenario: string;
  readonly description: string;
  readonly seed: number;
  readonly trials: number;
  readonly window: { readonly fromMs: number; readonly toMs: number };
  readonly settledAtMs: number;
  readonly changeAtMs: number | null;
  /** The validated scenario that ran (defaults filled in). */
  readonly settings: Scenario;
  readonly results: readonly SimDataplaneResult[];
}
