/**
 * One phase of the demo on real processes: start the pods and the clients, let them run, scale
 * out by one pod (started with the others, listed only now), then replace every pod in turn (rolling restart: the new pod is listed, the old
 * one marked terminating, then removed and stopped once idle or after its slot), and stop
 * everything. Counters are sampled every 250 ms for the live line and the charts; request counts
 * are snapshotted at the timeline's marks to compute shares over exact windows.
 */
import type { Clock } from '../core/clock.js';
import type { EndpointInput } from '../core/endpoint.js';
import { childScript } from './child-scripts.js';
import { DemoChild, type Spawner } from './demo-child.js';
import {
  type ClientFigures,
  type CountSnapshot,
  type PhaseEvent,
  type PhaseResult,
  type PodResult,
  windowImbalance,
  windowShares,
} from './phase-result.js';
import type { PhaseInfo } from './phases.js';
import { PodProcess, type PodRole } from './pod-process.js';
import { type ClientLatencyMs, DEMO_MARKER_FLAG, type LoadMode, type LoadStats } from './protocol.js';
import { ServiceEndpoints } from './service-endpoints.js';

/** How a phase's clients reach its pods, prepared per phase and torn down after it. */
export interface PhaseDataplane {
  /** In words, for the report. */
  readonly description: string;
  /** Where pods and clients run (default: on the host). */
  readonly spawner?: Spawner;
  /** Extra flags for every pod (the recycler's). */
  readonly podArgs?: readonly string[];
  /** What each pod runs (default `pod`; `sidecar-pod`: a plain app behind `evenlb proxy --sidecar`). */
  readonly podScript?: 'pod' | 'sidecar-pod';
  /**
   * Start the rolling restart's pods with the others, each listed only in its turn (as a
   * Deployment lists a surge pod once it is Ready): for pods whose start takes longer than a
   * restart slot (a sidecar pod starts two processes and loads the proxy).
   */
  readonly prestartReplacements?: boolean;
  /** The clients' mode, given the first endpoint list. */
  loadMode(endpoints: EndpointInput[]): LoadMode;
  /** Called once the first pods listen, before the clients start (e.g. to start the proxy). */
  start?(endpoints: EndpointInput[]): Promise<void>;
  /** Publishes an endpoint list (file rewrite, kube-proxy rules); agent modes are fed by the runner. */
  publish?(endpoints: EndpointInput[]): Promise<void> | void;
  close(): Promise<void>;
}

export interface PhaseProgress {
  readonly phase: PhaseInfo;
  readonly elapsedMs: number;
  readonly durationMs: number;
  /** max/mean of the ready pods' request rates over the last second. */
  readonly currentMaxOverMean: number;
  readonly ok: number;
  readonly failed: number;
  readonly pods: number;
}

export interface PhaseRunConfig {
  readonly pods: number;
  readonly clients: number;
  readonly durationMs: number;
  readonly ratePerClient: number;
  readonly seed: number;
  readonly runId: string;
  readonly clock: Clock;
  readonly signal: AbortSignal;
  /** The address of the n-th pod of a phase (1-based). */
  podAddress(n: number): string;
  onProgress(progress: PhaseProgress): void;
}

const SAMPLE_MS = 250;
const RATE_WINDOW_SAMPLES = 2;
const WARMUP_MS = 500;
const SETTLE_MS = 300;
const IDLE_MS = 300;
const POD_GRACE_MS = 500;
/** Requests the initial and scale-out pods send themselves before they are listed, over 4 connections (JIT warm-up; see pod-main). */
const POD_WARM_UP_REQUESTS = 1200;
/** Timeline, as fractions of the phase: a long steady window first, so that max/mean is measured on enough requests. */
const SCALE_OUT_AT = 0.4;
const RESTART_AT = 0.65;
const RESTART_SPAN = 0.3;
const MIN_AFTER_SCALE_OUT = 0.2;

class Aborted extends Error {}

function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Aborted());
    const onAbort = (): void => {
      timer.cancel();
      reject(new Aborted());
    };
    const timer = clock.setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Runs one phase; never throws for a phase-level failure (the result says "failed"). */
export async function runPhase(info: PhaseInfo, dataplane: PhaseDataplane, cfg: PhaseRunConfig): Promise<PhaseResult> {
  const { clock, signal } = cfg;
  const base = { id: info.id, title: info.title, explanation: info.explanation };
  const pods: PodProcess[] = [];
  const service = new ServiceEndpoints();
  let load: DemoChild | undefined;
  let loadStats: LoadStats = { ok: 0, failed: 0, errorsByCode: {} };
  let podCounter = 0;
  // Phase time starts when the clients do (reset below); pod and proxy start-up come before it.
  let t0 = clock.now();
  const elapsed = (): number => clock.now() - t0;
  const events: PhaseEvent[] = [];
  const snapshot = (): CountSnapshot => new Map(pods.map((p) => [p.name, p.stats.requests]));

  const startPod = async (role: PodRole): Promise<PodProcess> => {
    podCounter++;
    const pod = await PodProcess.start(
      {
        name: `pod-${podCounter}`,
        address: cfg.podAddress(podCounter),
        role,
        ...(dataplane.podScript === undefined ? {} : { script: dataplane.podScript }),
        args: [
          ...(dataplane.podArgs ?? []),
          // Pods started before the clients warm up; a replacement's start is on the rolling
          // restart's clock (and its share is not measured).
          ...(role === 'replacement' ? [] : ['--warm-up-requests', String(POD_WARM_UP_REQUESTS)]),
          '--seed',
          String((cfg.seed + podCounter) >>> 0),
        ],
      },
      cfg.runId,
      dataplane.spawner,
      () => clock.now(),
    );
    pods.push(pod);
    return pod;
  };

  // Sampling for the charts and the live line.
  const sampleT: number[] = [];
  const sampleCounts: Map<string, number>[] = [];
  const alive = new Set<string>();
  let sampler: { cancel(): void } | undefined;
  const takeSample = (): void => {
    sampleT.push(elapsed());
    sampleCounts.push(new Map(pods.filter((p) => alive.has(p.name)).map((p) => [p.name, p.stats.requests])));
    const n = sampleT.length;
    const back = Math.max(0, n - 1 - Math.round(1000 / SAMPLE_MS));
    const rates: number[] = [];
    const now = sampleCounts[n - 1] as Map<string, number>;
    const then = sampleCounts[back] as Map<string, number>;
    const ready = new Set(
      service
        .list()
        .filter((e) => e.conditions?.ready !== false)
        .map((e) => e.targetRef?.name),
    );
    for (const [name, count] of now) if (ready.has(name)) rates.push(count - (then.get(name) ?? 0));
    const total = rates.reduce((a, b) => a + b, 0);
    const mean = rates.length === 0 ? 0 : total / rates.length;
    cfg.onProgress({
      phase: info,
      elapsedMs: elapsed(),
      durationMs: cfg.durationMs,
      currentMaxOverMean: mean === 0 ? 1 : Math.max(...rates) / mean,
      ok: loadStats.ok,
      failed: loadStats.failed,
      pods: ready.size,
    });
  };
  const scheduleSample = (): void => {
    sampler = clock.setTimeout(() => {
      takeSample();
      scheduleSample();
    }, SAMPLE_MS);
  };

  const publish = async (): Promise<void> => {
    const list = service.list();
    await dataplane.publish?.(list);
    load?.send({ type: 'endpoints', endpoints: list });
  };

  try {
    // The scale-out pod starts (and warms up) with the others but is listed only at the
    // scale-out, as Kubernetes lists a pod once it is ready: its share then measures the
    // balancing, not a process start on a busy machine.
    const [initial, standby, prestarted] = await Promise.all([
      Promise.all(Array.from({ length: cfg.pods }, () => startPod('initial'))),
      startPod('scale-out'),
      dataplane.prestartReplacements === true
        ? Promise.all(Array.from({ length: cfg.pods + 1 }, () => startPod('replacement')))
        : Promise.resolve([]),
    ]);
    pods.splice(0, pods.length, ...initial, standby, ...prestarted);
    for (const p of initial) {
      service.add(p);
      alive.add(p.name);
    }
    await dataplane.start?.(service.list());
    await publish();

    load = new DemoChild(
      'clients',
      process.execPath,
      [childScript('load'), DEMO_MARKER_FLAG, cfg.runId],
      dataplane.spawner,
    );
    load.on((m) => {
      if (m.type === 'stats') {
        loadStats = {
          ok: Number(m.ok),
          failed: Number(m.failed),
          errorsByCode: (m.errorsByCode ?? {}) as Record<string, number>,
          sendingMs: Number(m.sendingMs ?? 0),
          ...(m.latencyMs === undefined ? {} : { latencyMs: m.latencyMs as ClientLatencyMs }),
        };
      }
    });
    await load.next('ready', 10_000);
    const mode = dataplane.loadMode(service.list());
    load.send({
      type: 'start',
      clients: cfg.clients,
      ratePerClient: cfg.ratePerClient,
      seed: cfg.seed,
      mode,
    });
    await load.next('started', 10_000);

    const D = cfg.durationMs;
    const tStart = clock.now();
    const at = async (fraction: number): Promise<void> => {
      const wait = tStart + fraction * D - clock.now();
      if (wait > 0) await sleep(clock, wait, signal);
    };
    t0 = tStart;
    const phaseElapsed = elapsed;
    const markPhase = (label: string): void => {
      events.push({ tMs: Math.round(phaseElapsed()), label });
    };
    scheduleSample();

    await sleep(clock, Math.min(WARMUP_MS, 0.1 * D), signal);
    const steadyFrom = snapshot();
    const steadyFromMs = phaseElapsed();
    await at(SCALE_OUT_AT);
    const steadyTo = snapshot();
    const steadyToMs = phaseElapsed();

    const newPod = standby;
    service.add(newPod);
    alive.add(newPod.name);
    await publish();
    markPhase(`scale-out: ${newPod.name} added`);
    await sleep(clock, SETTLE_MS, signal);
    const afterFrom = snapshot();
    const afterFromMs = phaseElapsed();
    await at(RESTART_AT);
    // On a busy machine the new pod may start late: the window after the scale-out still lasts
    // at least MIN_AFTER_SCALE_OUT of the phase, so its share is measured, not an empty window.
    const minAfter = afterFromMs + MIN_AFTER_SCALE_OUT * D - phaseElapsed();
    if (minAfter > 0) await sleep(clock, minAfter, signal);
    const afterTo = snapshot();
    const afterToMs = phaseElapsed();

    markPhase('rolling restart begins');
    const toReplace = [...initial, newPod];
    const slotMs = (RESTART_SPAN * D) / toReplace.length;
    const stopping: Promise<void>[] = [];
    for (const old of toReplace) {
      const slotStart = clock.now();
      const fresh = prestarted.shift() ?? (await startPod('replacement'));
      service.add(fresh);
      alive.add(fresh.name);
      service.markTerminating(old);
      await publish();
      // Wait until nothing reaches the old pod any more, or most of its slot is over.
      const idleDeadline = slotStart + slotMs * 0.6;
      while (clock.now() < idleDeadline) {
        const idle = old.stats.openConnections === 0 || clock.now() - old.lastRequestAtMs > IDLE_MS;
        if (idle) break;
        await sleep(clock, 50, signal);
      }
      service.remove(old);
      await publish();
      markPhase(`${old.name} → ${fresh.name}`);
      // The old pod drains in the background; the next replacement does not wait for it.
      stopping.push(
        old.stop(POD_GRACE_MS).then(() => {
          alive.delete(old.name);
        }),
      );
      const rest = slotStart + slotMs - clock.now();
      if (rest > 0) await sleep(clock, rest, signal);
    }
    await Promise.all(stopping);
    await at(1);
    sampler?.cancel();
    takeSample();

    // Stop the clients first, so that pods going away cannot fail requests.
    load.send({ type: 'stop' });
    await load.next('stopped', 10_000).catch(() => undefined);
    await load.waitExit(3000);
    const durationMs = phaseElapsed();

    const initialNames = initial.map((p) => p.name);
    const afterNames = [...initialNames, newPod.name];
    const steady = windowImbalance(steadyFrom, steadyTo, initialNames);
    const steadyShares = windowShares(steadyFrom, steadyTo, initialNames);
    const afterShares = windowShares(afterFrom, afterTo, afterNames);
    const podResults: PodResult[] = pods.map((p) => ({
      name: p.name,
      address: p.address,
      port: p.port,
      role: p.role,
      requests: p.stats.requests,
      connections: p.stats.connectionsTotal,
      steadyShare: steadyShares.get(p.name),
      afterScaleOutShare: afterShares.get(p.name),
    }));
    return {
      ...base,
      status: 'ok',
      dataplane: dataplane.description,
      durationMs: Math.round(durationMs),
      pods: podResults,
      maxOverMean: steady.maxOverMean,
      cov: steady.cov,
      jain: steady.jain,
      newPodShareOfFair: (afterShares.get(newPod.name) ?? 0) * afterNames.length,
      okRequests: loadStats.ok,
      failedRequests: loadStats.failed,
      errorsByCode: loadStats.errorsByCode,
      clients: clientFigures(cfg, loadStats),
      events,
      series: buildSeries(sampleT, sampleCounts, pods),
      windows: { steadyMs: [steadyFromMs, steadyToMs], afterScaleOutMs: [afterFromMs, afterToMs] },
    };
  } catch (err) {
    if (err instanceof Aborted) throw err;
    return { ...base, status: 'failed', reason: err instanceof Error ? err.message : String(err) };
  } finally {
    sampler?.cancel();
    if (load !== undefined && !load.hasExited) await load.terminate(2000);
    await Promise.all(pods.map((p) => p.stop(100).catch(() => undefined)));
    await dataplane.close().catch(() => undefined);
  }
}

export { Aborted as PhaseAborted };

/** What the clients drove against what they were asked to, and the latencies they saw. */
function clientFigures(cfg: PhaseRunConfig, stats: LoadStats): ClientFigures {
  const sendingMs = stats.sendingMs ?? 0;
  const sent = stats.ok + stats.failed;
  return {
    nominalRequestsPerSecond: cfg.clients * cfg.ratePerClient,
    sentRequestsPerSecond: sendingMs > 0 ? (1000 * sent) / sendingMs : 0,
    sendingMs: Math.round(sendingMs),
    ...(stats.latencyMs === undefined ? {} : { latencyMs: stats.latencyMs }),
  };
}

/**
 * Per-pod rates (requests/s) over the last `RATE_WINDOW_SAMPLES` samples (500 ms), a multiple
 * of the pods' 100 ms report period so the chart shows load, not reporting beats; null where
 * the pod did not exist.
 */
function buildSeries(tMs: number[], counts: Map<string, number>[], pods: readonly PodProcess[]) {
  const times: number[] = [];
  const ratesByPod: Record<string, (number | null)[]> = {};
  for (const p of pods) ratesByPod[p.name] = [];
  for (let i = RATE_WINDOW_SAMPLES; i < tMs.length; i++) {
    const t = tMs[i] as number;
    const dt = (t - (tMs[i - RATE_WINDOW_SAMPLES] as number)) / 1000;
    times.push(Math.round(t));
    const now = counts[i] as Map<string, number>;
    const before = counts[i - RATE_WINDOW_SAMPLES] as Map<string, number>;
    for (const p of pods) {
      const a = now.get(p.name);
      const b = before.get(p.name);
      (ratesByPod[p.name] as (number | null)[]).push(
        a === undefined || b === undefined || dt <= 0 ? null : Math.round((a - b) / dt),
      );
    }
  }
  return { tMs: times, ratesByPod };
}
