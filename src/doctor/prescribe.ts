/**
 * Prescriptions with numbers: for each cure that applies to the diagnosed cause, its settings
 * and what the simulator predicts for them — run on the observed pod count, connection count
 * and request rate, with evenlb's own balancers and lifetime policy on virtual time. Every
 * prediction carries the exact scenario, dataplane and seed it came from, so
 * `evenlb sim --scenario-file` reproduces it.
 *
 * The age for age recycling is chosen by simulation: the longest of a few candidate ages whose
 * predicted max/mean meets the target (fewest reconnects), else the shortest. Fair-share
 * recycling runs the simulator's model of the recycler's shedding (the same decision code),
 * with the default 10% tolerance. When the pods show no evenlb server metrics (they are not
 * Node servers running `evenlb/server`), the server-side cures come as the fair-share sidecar —
 * `evenlb proxy --sidecar` in each pod, with its manifest — the same shedding outside the app.
 * Besides the overall choice, the prescription names the best server-side cure: the one for
 * callers nobody can change.
 */
import {
  parseScenario,
  resolveDataplanes,
  runScenario,
  type SimDataplaneResult,
  type SimReport,
} from '../sim/index.js';
import { buildScenario, type ScenarioShape } from './cure-scenario.js';
import type { Cause } from './diagnose.js';
import type { LoadFigures } from './load-figures.js';

export const CURE_IDS = [
  'balanced-agent',
  'grpc-plugin',
  'proxy',
  'apiserver-round-trip',
  'fair-share-recycling',
  'fair-share-sidecar',
  'age-recycling',
] as const;
export type CureId = (typeof CURE_IDS)[number] | 'as-is';

export interface Prediction {
  readonly maxOverMean: number;
  readonly cov: number;
  readonly jain: number;
  readonly reconnectsPerMinute: number;
  /** `simulator` when the sim summary reports it, `computed` from connections opened and run length. */
  readonly reconnectsFrom: 'simulator' | 'computed';
  /** Fraction of requests served in another zone than the client's; null when the scenario has no zones. */
  readonly crossZone: number | null;
}

export interface SimulationRef {
  /** The raw scenario (the YAML shape of `--scenario-file`). */
  readonly scenario: Record<string, unknown>;
  readonly dataplane: string;
  readonly seed: number;
}

export interface CureAdvice {
  readonly id: CureId;
  readonly title: string;
  readonly applicable: boolean;
  /** Why not applicable, or what the figure assumes. */
  readonly note: string | undefined;
  readonly settings: string;
  readonly predicted: Prediction | null;
  readonly simulation: SimulationRef | null;
  /** The manifest to start from, for a cure deployed beside the app (the sidecar). */
  readonly manifest?: string;
}

export interface Prescription {
  /** The max/mean the chosen cure should reach. */
  readonly target: number;
  readonly assumptions: readonly string[];
  /** The simulator's view of the Service as it is (no cure). */
  readonly asIs: CureAdvice;
  readonly cures: readonly CureAdvice[];
  /** The id of the recommended cure, or null when none is applicable. */
  readonly chosen: CureId | null;
  /** The best cure that changes only the server side (for callers you cannot change), or null. */
  readonly serverSide: CureId | null;
}

export interface PrescribeInput {
  readonly cause: Cause;
  readonly figures: LoadFigures;
  readonly namespace: string;
  readonly name: string;
  /** Simulator dataplane for the Service as it is: `iptables`, `ipvs-sh`, `apiserver-legacy`, ... */
  readonly dataplane: string;
  readonly target: number;
  readonly seed: number;
  /** Whether the pods expose evenlb server metrics; false: server-side cures come as the sidecar. */
  readonly evenlbServer?: boolean | undefined;
  /** The Service's port the cure is for (its name or number, and the pods' targetPort). */
  readonly servicePort?: {
    readonly name: string | undefined;
    readonly port: number;
    readonly targetPort: number | string | undefined;
  };
}

/** The sidecar's manifests: the pod shapes, RBAC and NetworkPolicy; the webhook variant. */
export const SIDECAR_MANIFEST = 'deploy/kubernetes/server-sidecar/';
export const SIDECAR_WEBHOOK_MANIFEST = 'deploy/kubernetes/server-sidecar/webhook/';

/** Server-side cures: nothing changes in the callers. */
const SERVER_SIDE: readonly CureId[] = ['fair-share-recycling', 'fair-share-sidecar', 'age-recycling'];

/** Candidate connection ages for age recycling, longest first (fewest reconnects first). */
export const AGE_CANDIDATES_MS: readonly number[] = [300_000, 120_000, 60_000, 30_000, 10_000];

function reconnects(result: SimDataplaneResult, report: SimReport, initial: number): Prediction['reconnectsPerMinute'] {
  const runMinutes = Math.max(1e-9, report.window.toMs / 60_000);
  const opened = result.connectionsOpened / report.trials;
  return Math.round((Math.max(0, opened - initial) / runMinutes) * 100) / 100;
}

/** Runs one scenario on one dataplane. */
export function predict(sim: SimulationRef, initialConnections: number): Prediction {
  const scenario = parseScenario(sim.scenario, JSON.stringify(sim.scenario.name));
  const report = runScenario({ scenario, dataplanes: resolveDataplanes([sim.dataplane]), seed: sim.seed });
  const r = report.results[0] as SimDataplaneResult & { reconnectsPerMinute?: unknown };
  const fromSim = typeof r.reconnectsPerMinute === 'number' ? r.reconnectsPerMinute : undefined;
  return {
    maxOverMean: r.maxOverMean,
    cov: r.cov,
    jain: r.jain,
    reconnectsPerMinute: fromSim ?? reconnects(r, report, initialConnections),
    reconnectsFrom: fromSim === undefined ? 'computed' : 'simulator',
    crossZone: r.crossZone,
  };
}

const seconds = (ms: number): string => `${ms / 1000} s`;

/** Prescribes for `input.cause`; null for a balanced Service. */
export function prescribe(input: PrescribeInput): Prescription | null {
  if (input.cause === 'balanced') return null;
  const shape: ScenarioShape = buildScenario(input);
  const sim = (dataplane: string, patch: Record<string, unknown> = {}): SimulationRef => ({
    scenario: shape.raw(patch),
    dataplane,
    seed: input.seed,
  });
  const run = (
    id: CureId,
    title: string,
    settings: string,
    ref: SimulationRef | null,
    applicable: boolean,
    note?: string | ((predicted: Prediction | null) => string | undefined),
  ): CureAdvice => {
    const predicted = ref === null ? null : predict(ref, shape.connections);
    return {
      id,
      title,
      applicable,
      note: typeof note === 'function' ? note(predicted) : note,
      settings,
      predicted,
      simulation: ref,
    };
  };
  const svc = `${input.name}.${input.namespace}`;
  const cause = input.cause;
  const webhook = cause === 'apiserver-webhook-pool';
  const hashed = cause === 'client-address-hashing';
  const zonal = cause === 'zone-skew';
  const callerNote = webhook ? 'the caller is kube-apiserver, not your code' : undefined;
  const crossPercent = (p: Prediction | null): number | undefined =>
    p?.crossZone === null || p?.crossZone === undefined ? undefined : Math.round(p.crossZone * 100);
  const crossing = (p: Prediction | null): string => {
    const pct = crossPercent(p);
    return pct === undefined
      ? 'the figure assumes clients may reach every zone'
      : `balanced by crossing zones: ${pct}% of requests served in another zone than the client's`;
  };
  const zoneNote = zonal
    ? (p: Prediction | null): string =>
        `${crossing(p)}; to keep traffic in zone, spread pods to match each zone's traffic (topology spread constraints) instead`
    : undefined;
  const recycleNote = hashed
    ? 'a reconnect from the same client address hashes to the same pod: recycling does not move load'
    : zonal
      ? 'reconnects stay inside the client’s zone: recycling does not move load between zones'
      : undefined;
  const cures: CureAdvice[] = [];
  cures.push(
    run(
      'balanced-agent',
      'BalancedAgent (Node clients)',
      `new BalancedAgent({ kubernetes: true }) — routes ${input.name}.${input.namespace}.svc to k8s:///${svc}, policy least-request`,
      webhook ? null : sim('evenlb:least-request'),
      !webhook,
      callerNote ?? zoneNote,
    ),
  );
  cures.push(
    run(
      'grpc-plugin',
      'grpc plugin (grpc-js clients)',
      `registerGrpc(grpc); target k8s:///${svc}, service config {"loadBalancingConfig":[{"evenlb":{"policy":"least-request"}}]}`,
      webhook ? null : sim('evenlb:least-request'),
      !webhook,
      callerNote ?? zoneNote,
    ),
  );
  cures.push(
    run(
      'proxy',
      'evenlb proxy (any client)',
      `evenlb proxy --upstream k8s:///${svc}:<port> (policy least-request), clients pointed at the proxy`,
      webhook ? null : sim('evenlb:least-request', { clients: { balancerScope: 'shared' } }),
      !webhook,
      callerNote ??
        zoneNote ??
        'the proxy replicas themselves sit behind kube-proxy: run several, with listeners[].recycle.fairShare on their listeners',
    ),
  );
  if (webhook) {
    cures.push(
      run(
        'apiserver-round-trip',
        'kube-apiserver round-trip balancing',
        'Kubernetes with the WebhookRoundTripLoadBalancing feature gate on (Beta, default on): upgrade, or do not turn it off',
        sim('apiserver-roundtrip'),
        true,
      ),
    );
  }
  // The pods' own language decides how the server-side cures are deployed.
  const sidecar = input.evenlbServer === false;
  const port = input.servicePort;
  const peers = `k8s:///${svc}:${port?.name ?? port?.port ?? '<port>'}`;
  const listen = port?.targetPort === undefined ? (port?.port ?? '<targetPort>') : port.targetPort;
  const sidecarFlags =
    `evenlb proxy --sidecar --listen :${typeof listen === 'number' ? listen : `<port ${listen}>`} ` +
    `--app ${webhook ? 'https' : 'http'}://127.0.0.1:<app port> --peers ${peers}` +
    (webhook ? ' --tls-cert <the webhook’s tls.crt> --tls-key <tls.key> --app-ca <ca.crt>' : '');
  const sidecarNote =
    'the pods show no evenlb server metrics (not Node servers with evenlb/server): the same fair-share shedding runs in a sidecar in each pod — the app and its callers do not change; the Service’s targetPort moves to the sidecar';
  const fairShareSim = sim(input.dataplane, { server: { fairShare: { tolerance: 0.1 } } });
  if (sidecar) {
    cures.push({
      ...run(
        'fair-share-sidecar',
        'fair-share sidecar (server side, any language)',
        `${sidecarFlags} — sheds a pod's client connections only while it is over the fleet mean by 10%`,
        fairShareSim,
        recycleNote === undefined,
        recycleNote ?? sidecarNote,
      ),
      manifest: webhook ? SIDECAR_WEBHOOK_MANIFEST : SIDECAR_MANIFEST,
    });
  } else {
    cures.push(
      run(
        'fair-share-recycling',
        'fair-share recycling (server side)',
        `recycleConnections(server, { fairShare: { peers: '${peers}', tolerance: 0.1 } }) — close connections only while the pod is over the fleet mean by 10%`,
        fairShareSim,
        recycleNote === undefined,
        recycleNote ??
          (input.evenlbServer === undefined
            ? `for servers that are not Node: ${sidecarFlags} (${webhook ? SIDECAR_WEBHOOK_MANIFEST : SIDECAR_MANIFEST})`
            : undefined),
      ),
    );
  }
  let age: CureAdvice | undefined;
  for (const ageMs of AGE_CANDIDATES_MS) {
    const candidate = run(
      'age-recycling',
      'age recycling (server side)',
      sidecar
        ? `evenlb proxy --sidecar with maxConnectionAgeMs: ${ageMs} (its sidecar: file) — close each connection after ${seconds(ageMs)} (±10%)`
        : `recycleConnections(server, { maxConnectionAgeMs: ${ageMs} }) — close each connection after ${seconds(ageMs)} (±10%)`,
      sim(input.dataplane, { server: { lifetime: { maxConnectionAgeMs: ageMs } } }),
      recycleNote === undefined,
      recycleNote,
    );
    age = candidate;
    if ((candidate.predicted?.maxOverMean ?? Number.POSITIVE_INFINITY) <= input.target) break;
  }
  if (age !== undefined) cures.push(age);
  const asIs = run(
    'as-is',
    'as it is (simulated)',
    `${input.dataplane}, no cure`,
    sim(input.dataplane),
    true,
    zonal
      ? (p) =>
          `kube-proxy is simulated without topology-aware routing, so this figure does not show the zone skew${crossPercent(p) === undefined ? '' : ` (${crossPercent(p)}% of its requests cross zones)`}`
      : undefined,
  );
  return {
    target: input.target,
    assumptions: shape.assumptions,
    asIs,
    cures,
    chosen: choose(cures, input.target),
    serverSide: choose(
      cures.filter((c) => SERVER_SIDE.includes(c.id)),
      input.target,
    ),
  };
}

/**
 * Meets the target with the fewest reconnects (ties keep the listed order: differences of a
 * hundredth in max/mean among per-request cures are simulation noise); else the lowest max/mean.
 */
function choose(cures: readonly CureAdvice[], target: number): CureId | null {
  const ranked = cures.filter((c) => c.applicable && c.predicted !== null);
  if (ranked.length === 0) return null;
  const meets = ranked.filter((c) => (c.predicted as Prediction).maxOverMean <= target);
  const pool = meets.length > 0 ? meets : ranked;
  const best = [...pool].sort((a, b) => {
    const pa = a.predicted as Prediction;
    const pb = b.predicted as Prediction;
    return meets.length > 0 ? pa.reconnectsPerMinute - pb.reconnectsPerMinute : pa.maxOverMean - pb.maxOverMean;
  })[0];
  return best?.id ?? null;
}
