/**
 * Names the cause of a Service's imbalance from the figures, with the evidence that decided it.
 * The rules are checked in order and the first that fits wins:
 *
 * 1. `balanced` — max/mean at or below the threshold: look elsewhere (CPU limits, slow pods).
 * 2. `apiserver-webhook-pool` — a webhook configuration calls this Service: kube-apiserver's
 *    connections to it are pinned (its pool keyed by the Service host before the round-trip fix).
 * 3. `zone-skew` — per-zone means differ while each zone is even inside.
 * 4. `client-address-hashing` — kube-proxy IPVS `sh` (or `sessionAffinity: ClientIP`) pins each
 *    client address to one pod; reconnecting does not move it.
 * 5. `scale-out-starvation` — pods created after a gap hold far below their fair share.
 * 6. `rolling-update-pile-up` — no such gap, but load falls with creation order and the
 *    heaviest pod is among the first quarter created: the first new pods of a rollout took the
 *    reconnects.
 * 7. `kube-proxy-pinning` — a skew that holds from one window to the next and does not follow
 *    requested CPU: long-lived connections placed once by kube-proxy.
 * 8. `unexplained` — uneven, but none of the above fits (an unstable skew, or one following capacity).
 */
import type { KubeProxyMode, WebhookReference } from './kube-reader.js';
import type { LoadFigures } from './load-figures.js';

export const CAUSES = [
  'balanced',
  'apiserver-webhook-pool',
  'zone-skew',
  'client-address-hashing',
  'scale-out-starvation',
  'rolling-update-pile-up',
  'kube-proxy-pinning',
  'unexplained',
] as const;
export type Cause = (typeof CAUSES)[number];

export interface Diagnosis {
  readonly cause: Cause;
  /** One sentence. */
  readonly summary: string;
  readonly evidence: readonly string[];
}

export interface DiagnoseInput {
  readonly figures: LoadFigures;
  readonly webhooks: readonly WebhookReference[];
  readonly kubeProxy: KubeProxyMode;
  readonly sessionAffinity: string | undefined;
  /** The Service's `spec.trafficDistribution`; undefined when not set. */
  readonly trafficDistribution?: string | undefined;
  readonly balancedBelow: number;
}

/** How kube-proxy places new connections, as the evidence says it. */
function kubeProxyEvidence(k: KubeProxyMode): string {
  if (k.mode === undefined) return 'kube-proxy mode unknown (no readable configuration; --proxy-mode sets it)';
  const how: Record<string, string> = {
    iptables: 'a random endpoint per new connection (statistic random), pinned by conntrack',
    nftables: 'a random endpoint per new connection (numgen random), pinned by conntrack',
    ipvs: `IPVS scheduler ${k.scheduler ?? 'rr'}, per node`,
  };
  return `kube-proxy mode ${k.mode}${k.scheduler === undefined ? '' : `/${k.scheduler}`}: ${how[k.mode] ?? 'an endpoint per new connection'} (read from ${k.source})`;
}

function trafficEvidence(t: string | undefined): string {
  return t === undefined
    ? 'Service trafficDistribution not set: kube-proxy picks among every ready endpoint'
    : `Service trafficDistribution ${t}: kube-proxy prefers endpoints near the client (topology hints), spilling over only when none is ready nearby`;
}

const f2 = (v: number): string => v.toFixed(2);
const pct = (v: number): string => `${Math.round(v * 100)}%`;
const minutes = (ms: number): string =>
  ms >= 120_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 1000)} s`;

/** Thresholds, as named constants so the docs can quote them. */
export const RULES = Object.freeze({
  /** Zone means must differ by this factor (max zone / min zone). */
  zoneRatio: 1.3,
  /** Newest cohort below this fraction of its fair share is starving. */
  starvingShare: 0.5,
  /** Load falling with creation order at least this strongly (Spearman). */
  pileUpCorrelation: -0.8,
  /** Earlier and current loads at least this correlated: a stable skew. */
  stableCorrelation: 0.8,
  /** Load following requested CPU at least this strongly: capacity, not pinning. */
  capacityCorrelation: 0.8,
});

/** Chooses the cause. */
export function diagnose(input: DiagnoseInput): Diagnosis {
  const { figures: f, balancedBelow } = input;
  const m = f.imbalance;
  const heaviest = [...f.pods].sort((a, b) => b.overMean - a.overMean)[0];
  const base = [
    `max/mean ${f2(m.maxOverMean)}, CoV ${f2(m.cov)}, Jain ${f2(m.jain)} over ${m.count} ready pods (${f2(f.totalRequestsPerSecond)} req/s in all)`,
  ];
  if (heaviest !== undefined && m.count > 0) {
    const conn =
      heaviest.connections === undefined ? '' : `, ${heaviest.connections} of ${f.totalConnections ?? '?'} connections`;
    base.push(`heaviest pod ${heaviest.name}: ${f2(heaviest.overMean)}× the mean${conn}`);
  }
  base.push(kubeProxyEvidence(input.kubeProxy), trafficEvidence(input.trafficDistribution));
  if (m.count === 0)
    return { cause: 'balanced', summary: 'no ready pod with load: nothing to balance', evidence: base };
  if (m.maxOverMean <= balancedBelow) {
    return {
      cause: 'balanced',
      summary: `balanced — look elsewhere (max/mean ${f2(m.maxOverMean)} <= ${balancedBelow})`,
      evidence: base,
    };
  }
  if (input.webhooks.length > 0) {
    const names = input.webhooks.map((w) => `${w.kind} ${w.configuration} (webhook ${w.webhook})`);
    return {
      cause: 'apiserver-webhook-pool',
      summary: "kube-apiserver's webhook client pins its connections to few pods of this Service",
      evidence: [
        ...base,
        `called by kube-apiserver: ${names.join('; ')}`,
        'before the WebhookRoundTripLoadBalancing fix its idle pool is keyed by the Service host, so one dialled pod takes nearly every call',
      ],
    };
  }
  if (f.zones.length >= 2) {
    const means = f.zones.map((z) => z.overMean);
    const ratio = Math.max(...means) / Math.max(1e-9, Math.min(...means));
    const evenInside = f.zones.every((z) => z.maxOverMeanWithin <= balancedBelow);
    if (ratio >= RULES.zoneRatio && evenInside) {
      return {
        cause: 'zone-skew',
        summary: 'load is even inside each zone but not across zones',
        evidence: [
          ...base,
          ...f.zones.map(
            (z) =>
              `zone ${z.zone}: ${z.pods} pods at ${f2(z.overMean)}× the mean, max/mean ${f2(z.maxOverMeanWithin)} inside`,
          ),
          'per-zone pod counts do not match where the traffic comes from (topology-aware routing or zonal clients)',
        ],
      };
    }
  }
  const ipvsSh = input.kubeProxy.mode === 'ipvs' && input.kubeProxy.scheduler === 'sh';
  if (ipvsSh || input.sessionAffinity === 'ClientIP') {
    return {
      cause: 'client-address-hashing',
      summary: 'each client address is pinned to one pod, so reconnecting does not move its load',
      evidence: [
        ...base,
        ipvsSh
          ? `kube-proxy runs IPVS with the source-hashing scheduler (sh), read from ${input.kubeProxy.source}`
          : 'the Service sets sessionAffinity: ClientIP',
      ],
    };
  }
  if (f.newest !== undefined && f.newest.shareOfFair < RULES.starvingShare) {
    return {
      cause: 'scale-out-starvation',
      summary: 'pods added by a scale-out get almost nothing: existing connections never noticed them',
      evidence: [
        ...base,
        `${f.newest.pods.length} pods created ${minutes(f.newest.gapMs)} after the others (${f.newest.pods.join(', ')}) take ${pct(f.newest.shareOfFair)} of their fair share`,
      ],
    };
  }
  const order = [...f.pods].sort((a, b) => (b.ageMs ?? 0) - (a.ageMs ?? 0));
  // The first pods of the rollout are the heaviest: the heaviest is among the first quarter created.
  const firstHeaviest = heaviest !== undefined && order.slice(0, Math.ceil(order.length / 4)).includes(heaviest);
  if (f.ageOrderCorrelation !== undefined && f.ageOrderCorrelation <= RULES.pileUpCorrelation && firstHeaviest) {
    return {
      cause: 'rolling-update-pile-up',
      summary: 'the first pods of a rollout took the reconnects of the pods replaced after them',
      evidence: [
        ...base,
        `load falls with creation order (Spearman ${f2(f.ageOrderCorrelation)}): ${order.map((p) => `${p.name} ${f2(p.overMean)}×`).join(', ')}`,
      ],
    };
  }
  const capacity = f.capacityCorrelation !== undefined && f.capacityCorrelation >= RULES.capacityCorrelation;
  const stable = f.stability === undefined || f.stability >= RULES.stableCorrelation;
  if (stable && !capacity) {
    const stability =
      f.stability === undefined
        ? 'stability over time not measured (no earlier reading)'
        : `the skew holds over time: earlier and current loads correlate ${f2(f.stability)}`;
    const connections =
      f.totalConnections === undefined
        ? 'open connections not reported by the pods'
        : `open connections per pod: ${f.pods.map((p) => p.connections).join('/')} (${f.totalConnections} in all) — requests follow connections`;
    return {
      cause: 'kube-proxy-pinning',
      summary: 'long-lived connections placed once by kube-proxy carry the load where they landed',
      evidence: [
        ...base,
        stability,
        connections,
        f.capacityCorrelation === undefined
          ? 'pods request the same CPU: the skew is not capacity'
          : `load does not follow requested CPU (correlation ${f2(f.capacityCorrelation)})`,
      ],
    };
  }
  return {
    cause: 'unexplained',
    summary: 'uneven, but not in a way connection placement explains',
    evidence: [
      ...base,
      capacity
        ? `load follows requested CPU (correlation ${f2(f.capacityCorrelation as number)}): pods of different sizes`
        : `the skew moves between windows (correlation ${f2(f.stability as number)}): look at the clients' request mix`,
    ],
  };
}
