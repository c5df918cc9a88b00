/**
 * `evenlb doctor` end to end: read the Service's world from the API server, read each pod's
 * load (Prometheus, or scrapes through the pod proxy), compute the figures, name the cause and
 * prescribe cures checked on the simulator. Returns a `DoctorReport` (the `--json` output);
 * formatting and exit codes are the CLI's.
 */
import type { Clock } from '../core/clock.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import {
  KubeConnection,
  type KubernetesConnectionOptions,
  resolveKubeConnectionConfig,
  SERVICE_ACCOUNT_DIR,
} from '../discovery/kubernetes/kube-connection.js';
import { type Diagnosis, diagnose } from './diagnose.js';
import type { DoctorOptions, ProxyMode } from './doctor-options.js';
import { type ClusterView, type KubeProxyMode, KubeReader } from './kube-reader.js';
import { type LoadFigures, loadFigures, type PodFigures, type ZoneFigures } from './load-figures.js';
import type { LoadReading } from './load-reading.js';
import { scrapePods } from './pod-scraper.js';
import { type Prescription, prescribe } from './prescribe.js';
import { readPrometheus } from './prometheus-reader.js';

export interface DoctorDeps {
  /** Timers between scrapes. */
  readonly clock: Clock;
  /** Wall-clock epoch ms (pod ages, Prometheus query times). */
  readonly nowMs: () => number;
  /** An explicit API server connection (tests); else kubeconfig / in-cluster. */
  readonly connection?: KubernetesConnectionOptions;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export interface DoctorReport {
  readonly schemaVersion: 1;
  readonly service: {
    readonly namespace: string;
    readonly name: string;
    /** `spec.trafficDistribution`, or null when not set. */
    readonly trafficDistribution: string | null;
  };
  readonly readAt: string;
  readonly load: {
    readonly source: string;
    readonly metric: string;
    readonly connectionsMetric: string | null;
    /** Whether the pods expose evenlb server metrics (the recycler or the sidecar); null when not told. */
    readonly evenlbServer: boolean | null;
  };
  readonly kubeProxy: KubeProxyMode;
  readonly figures: {
    readonly readyPods: number;
    readonly maxOverMean: number;
    readonly cov: number;
    readonly jain: number;
    readonly requestsPerSecond: number;
    readonly connections: number | null;
    readonly newestPods: NonNullable<LoadFigures['newest']> | null;
    readonly stability: number | null;
    readonly ageOrderCorrelation: number | null;
    readonly zones: readonly ZoneFigures[];
  };
  readonly pods: readonly PodFigures[];
  readonly diagnosis: Diagnosis;
  readonly prescription: Prescription | null;
  readonly warnings: readonly string[];
  readonly failAbove: number | null;
  /** True when max/mean is above `failAbove`. */
  readonly failed: boolean;
}

const r3 = (v: number): number => Math.round(v * 1000) / 1000;

function explicitMode(mode: ProxyMode): KubeProxyMode | undefined {
  if (mode === 'auto') return undefined;
  const [m, scheduler] = mode.split('-');
  return { mode: m, scheduler, source: '--proxy-mode' };
}

/** The simulator dataplane standing for the Service as it is. */
function dataplaneFor(view: ClusterView, diagnosis: Diagnosis): string {
  if (diagnosis.cause === 'apiserver-webhook-pool') return 'apiserver-legacy';
  const { mode, scheduler } = view.kubeProxy;
  if (mode === 'ipvs') return ['rr', 'lc', 'sh'].includes(scheduler ?? '') ? `ipvs-${scheduler}` : 'ipvs-rr';
  if (mode === 'nftables') return 'nftables';
  return 'iptables';
}

/**
 * Examines `options.service`.
 *
 * @example
 * const report = await runDoctor(parseDoctorOptions({ service: 'prod/web' }), { clock: systemClock, nowMs: Date.now });
 * report.diagnosis.cause; // 'kube-proxy-pinning'
 */
export async function runDoctor(options: DoctorOptions, deps: DoctorDeps): Promise<DoctorReport> {
  const config = resolveKubeConnectionConfig({
    connection: deps.connection,
    kubeconfig: options.kubeconfig,
    context: options.context,
    serviceAccountDir: SERVICE_ACCOUNT_DIR,
    env: deps.env ?? process.env,
  });
  const connection = new KubeConnection(config);
  try {
    await connection.load();
    const view = await new KubeReader(connection, options.timeoutMs, deps.clock).read(
      options.namespace,
      options.name,
      explicitMode(options.proxyMode),
    );
    const ready = view.pods.filter((p) => p.ready);
    if (ready.length === 0) {
      throw new EvenlbError(
        ErrorCodes.NO_ENDPOINTS,
        `Service ${options.namespace}/${options.name} has no ready pod behind it: nothing to measure`,
        { details: { namespace: options.namespace, name: options.name } },
      );
    }
    const reading: LoadReading =
      options.prometheus === undefined
        ? await scrapePods(connection, ready, { ...options, namespace: options.namespace }, deps.clock)
        : await readPrometheus(
            { ...options, url: options.prometheus, clock: deps.clock },
            ready.map((p) => p.name),
            deps.nowMs(),
          );
    const nowMs = deps.nowMs();
    const figures = loadFigures(view.pods, reading, nowMs);
    const diagnosis = diagnose({
      figures,
      webhooks: view.webhooks,
      kubeProxy: view.kubeProxy,
      sessionAffinity: view.sessionAffinity,
      trafficDistribution: view.trafficDistribution,
      balancedBelow: options.balancedBelow,
    });
    const prescription = prescribe({
      cause: diagnosis.cause,
      figures,
      namespace: options.namespace,
      name: options.name,
      dataplane: dataplaneFor(view, diagnosis),
      target: Math.min(options.failAbove ?? options.balancedBelow, options.balancedBelow),
      seed: options.seed,
      evenlbServer: reading.evenlbServer,
      servicePort: view.ports[0],
    });
    const m = figures.imbalance;
    return {
      schemaVersion: 1,
      service: {
        namespace: options.namespace,
        name: options.name,
        trafficDistribution: view.trafficDistribution ?? null,
      },
      readAt: new Date(nowMs).toISOString(),
      load: {
        source: reading.source,
        metric: reading.metric,
        connectionsMetric: reading.connectionsMetric ?? null,
        evenlbServer: reading.evenlbServer ?? null,
      },
      kubeProxy: view.kubeProxy,
      figures: {
        readyPods: m.count,
        maxOverMean: r3(m.maxOverMean),
        cov: r3(m.cov),
        jain: r3(m.jain),
        requestsPerSecond: r3(figures.totalRequestsPerSecond),
        connections: figures.totalConnections ?? null,
        newestPods: figures.newest ?? null,
        stability: figures.stability === undefined ? null : r3(figures.stability),
        ageOrderCorrelation: figures.ageOrderCorrelation === undefined ? null : r3(figures.ageOrderCorrelation),
        zones: figures.zones,
      },
      pods: figures.pods,
      diagnosis,
      prescription,
      warnings: view.warnings,
      failAbove: options.failAbove ?? null,
      failed: options.failAbove !== undefined && m.maxOverMean > options.failAbove,
    };
  } finally {
    await connection.close();
  }
}
