/**
 * The simulator scenario that stands for the observed Service: its ready pod count, its open
 * connections (observed, or assumed when the pods do not report them), its request rate, and
 * the event the cause implies (a scale-out from the older cohort's size, a rolling update, or
 * nothing). Rates are scaled down when needed so one run stays within a request budget — the
 * balance figures depend on how connections and requests are placed, not on absolute rate, as
 * long as no pod saturates (service times are set so one pod could carry everything at 40%).
 * Every assumption is stated, for the report.
 */
import type { Cause } from './diagnose.js';
import type { LoadFigures } from './load-figures.js';

export interface ScenarioShape {
  /** The raw scenario, with `patch` merged one level deep into `clients` / `server`. */
  raw(patch?: Record<string, unknown>): Record<string, unknown>;
  /** Long-lived connections at the start. */
  readonly connections: number;
  readonly assumptions: readonly string[];
}

/** Requests one trial may simulate; rates are scaled down past it. */
export const REQUESTS_PER_TRIAL = 60_000;
export const TRIALS = 3;
export const WINDOW_MS = 300_000;
const WORKERS = 8;
/** kube-apiservers assumed to call a webhook (an HA control plane). */
const APISERVERS = 3;

export interface ScenarioInput {
  readonly cause: Cause;
  readonly figures: LoadFigures;
  readonly namespace: string;
  readonly name: string;
}

const round3 = (v: number): number => Math.round(v * 1000) / 1000;

/** Builds the scenario shape for an observed Service. */
export function buildScenario(input: ScenarioInput): ScenarioShape {
  const f = input.figures;
  const assumptions: string[] = [];
  const pods = Math.max(1, f.imbalance.count);
  let connections: number;
  let clients: number | undefined;
  if (input.cause === 'apiserver-webhook-pool') {
    connections = APISERVERS;
    clients = APISERVERS;
    assumptions.push(`${APISERVERS} kube-apiservers call the webhook, one pool each`);
  } else if (f.totalConnections !== undefined && f.totalConnections >= 1) {
    connections = Math.round(f.totalConnections);
  } else {
    connections = pods * 2;
    assumptions.push(`open connections not reported by the pods: assumed ${connections} (2 per pod)`);
  }
  const totalRps = f.totalRequestsPerSecond > 0 ? f.totalRequestsPerSecond : pods;
  const events: Record<string, unknown>[] = [];
  let startPods = pods;
  let from: 'start' | 'settled' = 'start';
  let warmupMs = 0;
  if (input.cause === 'scale-out-starvation' && f.newest !== undefined && f.newest.pods.length < pods) {
    startPods = pods - f.newest.pods.length;
    events.push({ type: 'scale', atMs: 10_000, pods });
    from = 'settled';
    warmupMs = 12_000;
    assumptions.push(`a scale-out from ${startPods} to ${pods} pods, measured after it`);
  } else if (input.cause === 'rolling-update-pile-up') {
    events.push({ type: 'rolling-update', atMs: 5_000, maxSurge: 1, maxUnavailable: 0 });
    from = 'settled';
    warmupMs = 5_000 + pods * 2_000;
    assumptions.push('a rolling update (maxSurge 1, maxUnavailable 0, 2 s to Ready), measured after it');
  }
  const zones = zoneShape(input, pods);
  if (zones !== undefined) {
    const listed = f.zones.map(
      (z, i) => `${z.zone} ${zones.pods[i]} pods, ${Math.round((zones.traffic[i] as number) * 100)}% of requests`,
    );
    assumptions.push(
      `zones as observed (${listed.join('; ')}): clients sit in their zone in proportion to the zone's load; the simulated dataplanes route without regard to zones`,
    );
  }
  const runSeconds = (WINDOW_MS + warmupMs) / 1000;
  const scale = Math.min(1, REQUESTS_PER_TRIAL / (totalRps * runSeconds));
  if (scale < 1) {
    assumptions.push(`request rate scaled by ${round3(scale)} to keep each run under ${REQUESTS_PER_TRIAL} requests`);
  }
  const perConnection = (totalRps * scale) / connections;
  const serviceTimeMs = Math.min(5, (0.4 * WORKERS * 1000) / Math.max(1e-9, totalRps * scale));
  assumptions.push(
    `${pods} pods, ${connections} connections, ${round3(totalRps * scale)} req/s Poisson, ${WINDOW_MS / 1000} s window, ${TRIALS} trials`,
  );
  const raw = (patch: Record<string, unknown> = {}): Record<string, unknown> => ({
    name: `doctor-${input.namespace}-${input.name}`,
    description: `evenlb doctor: ${input.namespace}/${input.name} as observed (${input.cause})`,
    trials: TRIALS,
    pods: {
      count: startPods,
      workers: WORKERS,
      serviceTime: { type: 'exponential', meanMs: round3(serviceTimeMs) },
      readyDelayMs: 2000,
      ...(zones === undefined ? {} : { zones: zones.pods }),
    },
    clients: {
      connections,
      ...(clients === undefined ? {} : { count: clients }),
      arrival: { type: 'poisson', ratePerSecond: Math.max(1e-6, round3(perConnection)) },
      ...(zones === undefined ? {} : { zones: zones.traffic }),
      ...((patch.clients as Record<string, unknown> | undefined) ?? {}),
    },
    server: { ...((patch.server as Record<string, unknown> | undefined) ?? {}) },
    events,
    measure: { from, windowMs: WINDOW_MS },
  });
  return { raw, connections, assumptions };
}

/**
 * For a zone skew, the observed zones: pods per zone and each zone's share of the requests
 * (its pods × their mean load), so the simulator places clients where the traffic comes from
 * and reports how much of it a zone-unaware cure sends across zones. Undefined when some ready
 * pod has no zone or there are fewer than two zones.
 */
function zoneShape(input: ScenarioInput, pods: number): { pods: number[]; traffic: number[] } | undefined {
  const zones = input.figures.zones;
  if (input.cause !== 'zone-skew' || zones.length < 2) return undefined;
  const counts = zones.map((z) => z.pods);
  if (counts.reduce((a, b) => a + b, 0) !== pods) return undefined;
  const weights = zones.map((z) => z.pods * z.overMean);
  const total = weights.reduce((a, b) => a + b, 0);
  if (!(total > 0)) return undefined;
  return { pods: counts, traffic: weights.map((w) => round3(w / total)) };
}
