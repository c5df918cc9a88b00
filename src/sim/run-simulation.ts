/**
 * Runs a scenario through a list of dataplanes, once per trial, and turns the outcomes into
 * a `SimReport`. Trial t uses the same seed for every dataplane, so the dataplanes are
 * compared on identical arrivals and service times; figures over trials are means (max/mean
 * per trial, then averaged — as the closed forms are stated), pod counts and time series are
 * sums. Imbalance figures come from the shared `imbalance()` — of requests, and of
 * utilization (a pod's busy worker-time over its workers × ready time in the window).
 */
import { SeededRandom } from '../core/random.js';
import { imbalance } from '../metrics/imbalance.js';
import type { DataplaneModel } from './dataplane/dataplane.js';
import { LatencyHistogram } from './metrics/latency-histogram.js';
import { estimateEndMs } from './model/run-bounds.js';
import { POD_HISTOGRAM_GROWTH } from './model/sim-pod.js';
import { Simulation } from './model/simulation.js';
import type { SimulationOutcome } from './model/simulation-outcome.js';
import { zoneName } from './model/zones.js';
import { newPodsRamp, timeToFairShare } from './report/new-pods.js';
import type { SimDataplaneResult, SimPodReport, SimReport, SimZoneReport, TrialSpread } from './report/sim-report.js';
import type { Scenario } from './scenario/scenario-spec.js';

export interface RunOptions {
  readonly scenario: Scenario;
  readonly dataplanes: readonly DataplaneModel[];
  readonly seed: number;
  /** Called with the fraction done (0..1) and where the run stands, every few thousand events. */
  readonly onProgress?: (fraction: number, status: ProgressStatus) => void;
}

/** Where a running `runScenario` stands. */
export interface ProgressStatus {
  /** Dataplane being simulated. */
  readonly dataplane: string;
  /** Virtual time of the current run, ms. */
  readonly simulatedMs: number;
  /** Events handled so far, all runs together. */
  readonly events: number;
}

/**
 * Runs every dataplane over every trial and reports.
 *
 * @example
 * const scenario = parseScenario(findBuiltinScenario('steady')!.raw(), 'steady');
 * const report = runScenario({ scenario, dataplanes: resolveDataplanes(['iptables']), seed: 1 });
 * report.results[0].maxOverMean; // ≈ 1.3
 */
export function runScenario(options: RunOptions): SimReport {
  const { scenario, dataplanes, seed } = options;
  // Reject what a dataplane cannot model before any of them runs (not after minutes of work).
  for (const dataplane of dataplanes) dataplane.check?.(scenario);
  const trials = scenario.trials;
  const seeds: number[] = [];
  const root = new SeededRandom(seed);
  for (let t = 0; t < trials; t++) seeds.push(root.fork().seed);
  const totalRuns = trials * dataplanes.length;
  const estimatedEnd = estimateEndMs(scenario);
  let run = 0;
  let events = 0;
  let first: SimulationOutcome | undefined;
  const results: SimDataplaneResult[] = [];
  for (const dataplane of dataplanes) {
    const acc = new Accumulator(dataplane);
    for (let t = 0; t < trials; t++) {
      const onTick =
        options.onProgress === undefined
          ? undefined
          : (now: number, handled: number) =>
              options.onProgress?.((run + Math.min(1, now / estimatedEnd)) / totalRuns, {
                dataplane: dataplane.name,
                simulatedMs: now,
                events: events + handled,
              });
      const sim = new Simulation({ scenario, dataplane, seed: seeds[t] as number, onTick });
      const outcome = sim.run();
      events += outcome.events;
      first ??= outcome;
      acc.add(outcome);
      run++;
      options.onProgress?.(run / totalRuns, { dataplane: dataplane.name, simulatedMs: outcome.windowEndMs, events });
    }
    results.push(acc.result());
  }
  return {
    schemaVersion: 1,
    scenario: scenario.name,
    description: scenario.description,
    seed,
    trials,
    window: { fromMs: first?.windowStartMs ?? 0, toMs: first?.windowEndMs ?? 0 },
    settledAtMs: first?.settledAtMs ?? 0,
    changeAtMs: first?.changeAtMs ?? null,
    settings: scenario,
    results,
  };
}

interface PodAccumulator {
  name: string;
  address: string;
  revision: number;
  measured: boolean;
  requests: number;
  createdAtMs: number;
  readyAtMs: number | null;
  removedAtMs: number | null;
  openConnections: number | null;
  zone: string | null;
  latency: LatencyHistogram;
  /** Busy worker-ms and worker-ms of capacity (workers × ready time) in the window, summed over trials. */
  busyMs: number;
  capacityMs: number;
  /** Requests per bucket, summed over trials (grown as needed). */
  series: Float64Array;
}

class Accumulator {
  readonly #dataplane: DataplaneModel;
  readonly #pods = new Map<string, PodAccumulator>();
  readonly #latency = new LatencyHistogram();
  readonly #maxOverMean: number[] = [];
  #utilizationMaxOverMean = 0;
  #probes = 0;
  readonly #fairShare: (number | null)[] = [];
  #cov = 0;
  #jain = 0;
  #trials = 0;
  #newPods = 0;
  #sent = 0;
  #failed = 0;
  #window = 0;
  #toRemoved = 0;
  #connections = 0;
  #reconnects = 0;
  #windowMinutes = 0;
  #crossZone = 0;
  #zoned = false;
  #events = 0;
  #bucketMs = 1000;
  /** Per ramp bucket: sum of the new pods' share over fair, and the trials that defined it. */
  readonly #rampSum: number[] = [];
  readonly #rampTrials: number[] = [];

  constructor(dataplane: DataplaneModel) {
    this.#dataplane = dataplane;
  }

  add(o: SimulationOutcome): void {
    this.#trials++;
    this.#bucketMs = o.bucketMs;
    this.#zoned ||= o.pods.some((p) => p.zone >= 0);
    const measured = o.pods.filter((p) => p.state === 'ready');
    const figures = imbalance(measured.map((p) => p.windowRequests));
    this.#maxOverMean.push(figures.maxOverMean);
    this.#utilizationMaxOverMean += imbalance(
      measured.filter((p) => p.windowReadyMs > 0).map((p) => p.windowBusyMs / (p.workers * p.windowReadyMs)),
    ).maxOverMean;
    this.#probes += o.windowProbesSent;
    this.#cov += figures.cov;
    this.#jain += figures.jain;
    this.#latency.merge(o.latency);
    this.#sent += o.requestsSent;
    this.#failed += o.requestsFailed;
    this.#window += o.windowRequests;
    this.#toRemoved += o.windowRequestsToRemovedPods;
    this.#connections += o.connectionsOpened;
    this.#reconnects += o.connectionsOpenedInWindow;
    this.#windowMinutes += Math.max(0, o.windowEndMs - o.windowStartMs) / 60_000;
    this.#crossZone += o.windowRequestsCrossZone;
    this.#events += o.events;
    const fresh = o.pods.filter((p) => !p.initial);
    this.#newPods = fresh.length;
    if (fresh.length > 0) {
      this.#fairShare.push(timeToFairShare(o));
      newPodsRamp(o).forEach((v, i) => {
        if (v === null) return;
        this.#rampSum[i] = (this.#rampSum[i] ?? 0) + v;
        this.#rampTrials[i] = (this.#rampTrials[i] ?? 0) + 1;
      });
    }
    // Whole buckets only: a last, partial bucket would read as a drop in load.
    const lastBucket = Math.max(1, Math.floor(o.windowEndMs / o.bucketMs + 1e-9));
    const connectionLevel = this.#dataplane.granularity !== 'request';
    for (const pod of o.pods) {
      const isMeasured = pod.state === 'ready';
      if (!isMeasured && pod.windowRequests === 0 && pod.totalRequests === 0) continue;
      let acc = this.#pods.get(pod.name);
      if (acc === undefined) {
        acc = {
          name: pod.name,
          address: pod.address,
          revision: pod.revision,
          measured: isMeasured,
          requests: 0,
          createdAtMs: pod.createdAtMs,
          readyAtMs: pod.readyAtMs ?? null,
          removedAtMs: pod.removedAtMs ?? null,
          openConnections: null,
          zone: pod.zone < 0 ? null : zoneName(pod.zone),
          latency: new LatencyHistogram(POD_HISTOGRAM_GROWTH),
          busyMs: 0,
          capacityMs: 0,
          series: new Float64Array(lastBucket),
        };
        this.#pods.set(pod.name, acc);
      }
      acc.requests += pod.windowRequests;
      acc.openConnections = connectionLevel ? pod.openConnections : null;
      acc.latency.merge(pod.latency);
      acc.busyMs += pod.windowBusyMs;
      acc.capacityMs += pod.workers * pod.windowReadyMs;
      if (acc.series.length < lastBucket) {
        const grown = new Float64Array(lastBucket);
        grown.set(acc.series);
        acc.series = grown;
      }
      const series = acc.series;
      const copy = Math.min(lastBucket, pod.series.length);
      for (let b = 0; b < copy; b++) series[b] = (series[b] as number) + (pod.series[b] as number);
    }
  }

  /** Per zone: measured pods and their share of the window's requests (null without zones). */
  #zones(pods: readonly PodAccumulator[]): SimZoneReport[] | null {
    if (!this.#zoned) return null;
    const byZone = new Map<string, { pods: number; requests: number }>();
    for (const p of pods) {
      if (p.zone === null) continue;
      const z = byZone.get(p.zone) ?? { pods: 0, requests: 0 };
      if (p.measured) z.pods++;
      z.requests += p.requests;
      byZone.set(p.zone, z);
    }
    return [...byZone.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([zone, z]) => ({
        zone,
        pods: z.pods,
        share: this.#window === 0 ? 0 : round(z.requests / this.#window),
      }));
  }

  result(): SimDataplaneResult {
    const n = this.#trials;
    const pods = [...this.#pods.values()];
    const measured = pods.filter((p) => p.measured);
    const mean = measured.length === 0 ? 0 : measured.reduce((s, p) => s + p.requests, 0) / measured.length;
    const podReports: SimPodReport[] = pods
      .filter((p) => p.measured || p.requests > 0)
      .map((p) => ({
        name: p.name,
        address: p.address,
        revision: p.revision,
        measured: p.measured,
        share: this.#window === 0 ? 0 : round(p.requests / this.#window),
        overMean: mean === 0 ? 0 : round(p.requests / mean),
        requests: p.requests,
        createdAtMs: round(p.createdAtMs),
        readyAtMs: p.readyAtMs === null ? null : round(p.readyAtMs),
        removedAtMs: p.removedAtMs === null ? null : round(p.removedAtMs),
        openConnections: p.openConnections,
        zone: p.zone,
        latencyMs:
          p.latency.count === 0 ? null : { mean: round(p.latency.meanMs), p99: round(p.latency.quantile(0.99) ?? 0) },
        utilization: p.capacityMs === 0 ? null : round(p.busyMs / p.capacityMs),
      }));
    const fair = this.#fairShare;
    const reached = fair.every((f) => f !== null) && fair.length > 0;
    return {
      dataplane: this.#dataplane.name,
      description: this.#dataplane.description,
      granularity: this.#dataplane.granularity,
      policyKind: this.#dataplane.policyKind ?? null,
      maxOverMean: round(average(this.#maxOverMean)),
      cov: round(this.#cov / n),
      jain: round(this.#jain / n),
      maxOverMeanTrials: n > 1 ? spread(this.#maxOverMean) : null,
      utilizationMaxOverMean: round(this.#utilizationMaxOverMean / n),
      newPods: this.#newPods,
      newPodsFairShareMs: reached ? round(average(fair as number[])) : null,
      latencyMs:
        this.#latency.count === 0
          ? null
          : {
              mean: round(this.#latency.meanMs),
              p50: round(this.#latency.quantile(0.5) ?? 0),
              p99: round(this.#latency.quantile(0.99) ?? 0),
              p999: round(this.#latency.quantile(0.999) ?? 0),
              max: round(this.#latency.maxMs),
            },
      requests: { sent: this.#sent, failed: this.#failed, window: this.#window, toRemovedPods: this.#toRemoved },
      connectionsOpened: this.#connections,
      probes: { sent: this.#probes, perRequest: this.#window === 0 ? 0 : round(this.#probes / this.#window) },
      reconnectsPerMinute:
        this.#dataplane.granularity === 'request' || this.#windowMinutes === 0
          ? null
          : round(this.#reconnects / this.#windowMinutes),
      newPodsOverFair:
        this.#newPods === 0
          ? null
          : {
              bucketMs: this.#bucketMs,
              overFair: this.#rampSum.map((v, i) => round(v / (this.#rampTrials[i] as number))),
            },
      crossZone: this.#zoned ? (this.#window === 0 ? 0 : round(this.#crossZone / this.#window)) : null,
      zones: this.#zones(pods),
      events: this.#events,
      pods: podReports,
      series: {
        bucketMs: this.#bucketMs,
        pods: pods.map((p) => ({ name: p.name, requests: Array.from(p.series) })),
      },
    };
  }
}

function average(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((s, v) => s + v, 0) / values.length;
}

function spread(values: readonly number[]): TrialSpread {
  const mean = average(values);
  const variance = average(values.map((v) => (v - mean) ** 2));
  return {
    mean: round(mean),
    stdev: round(Math.sqrt(variance)),
    min: round(Math.min(...values)),
    max: round(Math.max(...values)),
  };
}

/** Rounds to 6 significant decimals' worth, so JSON stays readable (and still deterministic). */
function round(v: number): number {
  return Math.round(v * 1e6) / 1e6;
}
