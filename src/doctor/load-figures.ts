/**
 * The figures a diagnosis rests on, from the observed pods and their load: max/mean, CoV and
 * Jain over ready pods (the shared `imbalance()`), each pod's load against the mean with its
 * age, zone and connections, per-zone means, the newest creation cohort's share of its fair
 * share, how well the earlier window's loads predict the current ones (a stable skew), and
 * whether load follows creation order or requested CPU.
 */
import { type Imbalance, imbalance } from '../metrics/imbalance.js';
import type { ObservedPod } from './kube-reader.js';
import type { LoadReading } from './load-reading.js';

export interface PodFigures {
  readonly name: string;
  readonly zone: string | undefined;
  readonly node: string | undefined;
  readonly revision: string | undefined;
  readonly restarts: number;
  /** ms since creation (at the reading), undefined when unknown. */
  readonly ageMs: number | undefined;
  /** ms since it became Ready. */
  readonly readyForMs: number | undefined;
  readonly requestsPerSecond: number;
  readonly connections: number | undefined;
  /** Load over the mean of ready pods; 1 is the fair share. */
  readonly overMean: number;
  /** Same, in the earlier window. */
  readonly earlierOverMean: number | undefined;
}

export interface ZoneFigures {
  readonly zone: string;
  readonly pods: number;
  /** Mean load of the zone's pods over the mean of all pods. */
  readonly overMean: number;
  /** max/mean among the zone's own pods. */
  readonly maxOverMeanWithin: number;
}

export interface LoadFigures {
  readonly imbalance: Imbalance;
  readonly pods: readonly PodFigures[];
  readonly zones: readonly ZoneFigures[];
  readonly totalRequestsPerSecond: number;
  /** Sum of observed open connections, when every pod reported them. */
  readonly totalConnections: number | undefined;
  /** The pods created after the largest gap in creation times (a scale-out or a rollout step). */
  readonly newest:
    | { readonly pods: readonly string[]; readonly gapMs: number; readonly shareOfFair: number }
    | undefined;
  /** Pearson correlation of earlier and current per-pod loads; undefined without an earlier reading. */
  readonly stability: number | undefined;
  /** Spearman correlation of creation order (oldest first) with load. */
  readonly ageOrderCorrelation: number | undefined;
  /** Pearson correlation of requested CPU with load, when requests differ between pods. */
  readonly capacityCorrelation: number | undefined;
}

function pearson(xs: readonly number[], ys: readonly number[]): number | undefined {
  const n = xs.length;
  if (n < 3) return undefined;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const dx = (xs[i] as number) - mx;
    const dy = (ys[i] as number) - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  if (sxx === 0 || syy === 0) return undefined;
  return sxy / Math.sqrt(sxx * syy);
}

function ranks(xs: readonly number[]): number[] {
  const order = xs.map((v, i) => [v, i] as const).sort((a, b) => a[0] - b[0]);
  const r = new Array<number>(xs.length);
  for (let i = 0; i < order.length; ) {
    let j = i;
    while (j + 1 < order.length && order[j + 1]![0] === order[i]![0]) j++;
    for (let k = i; k <= j; k++) r[order[k]![1]] = (i + j) / 2;
    i = j + 1;
  }
  return r;
}

/** Minimum gap in creation times that splits pods into an older and a newer cohort, ms. */
const COHORT_GAP_MS = 120_000;

/** Computes the figures for the ready pods that have a load reading; `nowMs` is epoch ms. */
export function loadFigures(pods: readonly ObservedPod[], reading: LoadReading, nowMs: number): LoadFigures {
  const ready = pods.filter((p) => p.ready && reading.pods.has(p.name));
  const loads = ready.map((p) => reading.pods.get(p.name)?.requestsPerSecond ?? 0);
  const figures = imbalance(loads);
  const earlierLoads = reading.earlier === undefined ? undefined : ready.map((p) => reading.earlier?.get(p.name) ?? 0);
  const earlierMean = earlierLoads === undefined ? 0 : imbalance(earlierLoads).mean;
  const podFigures: PodFigures[] = ready.map((p, i) => ({
    name: p.name,
    zone: p.zone,
    node: p.node,
    revision: p.revision,
    restarts: p.restarts,
    ageMs: p.createdAtMs === undefined ? undefined : nowMs - p.createdAtMs,
    readyForMs: p.readyAtMs === undefined ? undefined : nowMs - p.readyAtMs,
    requestsPerSecond: loads[i] as number,
    connections: reading.pods.get(p.name)?.connections,
    overMean: figures.mean === 0 ? 0 : (loads[i] as number) / figures.mean,
    earlierOverMean:
      earlierLoads === undefined || earlierMean === 0 ? undefined : (earlierLoads[i] as number) / earlierMean,
  }));
  const zoneNames = [...new Set(podFigures.map((p) => p.zone).filter((z): z is string => z !== undefined))].sort();
  const zones = zoneNames.map((zone) => {
    const inZone = podFigures.filter((p) => p.zone === zone);
    const within = imbalance(inZone.map((p) => p.requestsPerSecond));
    return {
      zone,
      pods: inZone.length,
      overMean: figures.mean === 0 ? 0 : within.mean / figures.mean,
      maxOverMeanWithin: within.maxOverMean,
    };
  });
  const connections = podFigures.map((p) => p.connections);
  const totalConnections = connections.every((c) => c !== undefined)
    ? connections.reduce<number>((s, c) => s + (c as number), 0)
    : undefined;
  const dated = podFigures
    .filter((p) => p.ageMs !== undefined)
    .sort((a, b) => (b.ageMs as number) - (a.ageMs as number));
  let newest: LoadFigures['newest'];
  if (dated.length === podFigures.length && dated.length >= 2) {
    let gapAt = -1;
    let gapMs = 0;
    for (let i = 1; i < dated.length; i++) {
      const gap = (dated[i - 1]!.ageMs as number) - (dated[i]!.ageMs as number);
      if (gap > gapMs) {
        gapMs = gap;
        gapAt = i;
      }
    }
    if (gapAt > 0 && gapMs >= COHORT_GAP_MS) {
      const young = dated.slice(gapAt);
      const youngLoad = young.reduce((s, p) => s + p.requestsPerSecond, 0);
      const fair = (young.length / podFigures.length) * figures.total;
      newest = { pods: young.map((p) => p.name), gapMs, shareOfFair: fair === 0 ? 1 : youngLoad / fair };
    }
  }
  const byAge = dated.length === podFigures.length ? dated : [];
  const cpu = ready.map((p) => p.cpuRequestMillis);
  const cpuKnown = cpu.every((c) => c !== undefined) && new Set(cpu).size > 1;
  return {
    imbalance: figures,
    pods: podFigures,
    zones,
    totalRequestsPerSecond: figures.total,
    totalConnections,
    newest,
    stability: earlierLoads === undefined ? undefined : pearson(earlierLoads, loads),
    ageOrderCorrelation:
      byAge.length < 3
        ? undefined
        : // Ranks of age (ties averaged), so pods created together carry no order.
          pearson(ranks(byAge.map((p) => -(p.ageMs as number))), ranks(byAge.map((p) => p.requestsPerSecond))),
    capacityCorrelation: cpuKnown ? pearson(cpu as number[], loads) : undefined,
  };
}
