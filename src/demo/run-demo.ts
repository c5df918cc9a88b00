/**
 * `evenlb demo` end to end: run the chosen phases one after another on real processes, print the
 * live line and the tables, write the HTML report (and `--json` results). A phase that cannot
 * start or breaks is reported as failed, with the reason. Ctrl-C aborts the running phase, stops
 * every child process, removes the namespace and the temporary files, and exits 130.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Clock, systemClock } from '../core/clock.js';
import { agentDataplane, freePort, proxyDataplane, sidecarPods, withPeersFile } from './dataplanes.js';
import { killAllChildren } from './demo-child.js';
import type { DemoOptions } from './demo-options.js';
import { type DemoReportData, renderHtmlReport } from './html-report.js';
import {
  type NetfilterApi,
  netfilterApi,
  netfilterDataplane,
  SERVICE_PORT,
  SERVICE_VIP,
} from './netfilter-dataplane.js';
import type { PhaseResult } from './phase-result.js';
import { PHASES, type PhaseId } from './phases.js';
import { ProgressLine } from './progress-line.js';
import { PhaseAborted, type PhaseDataplane, runPhase } from './run-phase.js';
import { renderPhase, renderSummary } from './text-report.js';

/** The environment variable every demo child inherits (with the run id): how strays are found. */
export const DEMO_RUN_ENV = 'EVENLB_DEMO_RUN';

/**
 * Recycler settings for the recycler phase's pods: 100 requests per connection (about half a
 * second at 200 requests/s), an age limit of 5 s behind it for quiet clients.
 */
const RECYCLE_ARGS = ['--recycle-max-requests', '100', '--recycle-max-age-ms', '5000', '--recycle-grace-ms', '500'];

/**
 * Fair-share settings for the recycler phase's pods, scaled to a phase of seconds (production
 * defaults decide every second on a 2 s window; the demo's new pod has about two seconds to
 * fill): decide every 100 ms (jittered) on the connections each pod holds (every demo client sends
 * at the same rate over one connection, so a connection is an exact, noise-free unit of load;
 * requests per second over a 300 ms window swing by ±50% on a busy machine and the fleet then
 * sheds on noise and fills the new pod late — the library's default stays requests/s), ask all
 * 4 peers each period (answers older than 200 ms no longer count), wait 50 ms after shedding
 * (less than the shortest jittered period, so a pod may shed in every period: a connection count
 * shows a shed at once, and a re-dial takes a few ms; with 100 ms, a period drawn shorter than
 * 100 ms held and the next shed came two periods later, which slowed the new pod's filling),
 * warm up for 600 ms after being listed, shed up to half the connections per decision; the
 * default 10% tolerance; a 60 s age limit behind it as a ceiling.
 */
const FAIR_SHARE_ARGS = [
  '--fair-share-load-metric',
  'connections',
  '--fair-share-period-ms',
  '100',
  '--fair-share-window-ms',
  '300',
  '--fair-share-warmup-ms',
  '600',
  '--fair-share-cooldown-ms',
  '50',
  '--fair-share-max-shed-fraction',
  '0.5',
  '--fair-share-peers-per-period',
  '4',
  '--fair-share-peer-ttl-ms',
  '200',
  '--recycle-max-age-ms',
  '60000',
  '--recycle-grace-ms',
  '500',
];

/**
 * The sidecar phase's fair-share settings: the recycler phase's (the same shedder, now in the
 * sidecar), and the pod's grace on termination, which the sidecar's drain gets.
 */
const SIDECAR_ARGS = [
  ...FAIR_SHARE_ARGS.slice(0, FAIR_SHARE_ARGS.indexOf('--recycle-max-age-ms')),
  '--grace-ms',
  '500',
];

export interface DemoIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
  readonly clock?: Clock;
  /** The network namespace implementation (default: evenlb's `KubeProxyNamespace`). */
  readonly netfilter?: NetfilterApi;
}

export interface DemoOutcome {
  readonly exitCode: number;
  readonly results: readonly PhaseResult[];
  readonly runId: string;
}

/** Runs the demo. Usage problems (netfilter without root) return exit code 2 before anything starts. */
export async function runDemo(options: DemoOptions, io: DemoIo): Promise<DemoOutcome> {
  const clock = io.clock ?? systemClock;
  const netfilter = io.netfilter ?? netfilterApi;
  const runId = randomUUID().slice(0, 8);
  const say = (text: string): void => {
    io.stderr.write(`${text}\n`);
  };

  const netfilterPhases = options.phases.filter(
    (p) => p === 'pinned' || p === 'recycler' || p === 'sidecar' || p === 'recycler-age',
  );
  if (options.dataplane === 'netfilter' && netfilterPhases.length > 0) {
    const missing = netfilter.support();
    if (missing !== undefined) {
      say(
        `evenlb demo: --dataplane netfilter needs Linux, root (CAP_NET_ADMIN and CAP_SYS_ADMIN, e.g. sudo), ` +
          `iproute2 and iptables, to create a network namespace with kube-proxy rules: ${missing}`,
      );
      return { exitCode: 2, results: [], runId };
    }
  }

  process.env[DEMO_RUN_ENV] = runId;
  const tmp = mkdtempSync(join(tmpdir(), 'evenlb-demo-'));
  const abort = new AbortController();
  let interrupts = 0;
  const onSignal = (): void => {
    interrupts++;
    abort.abort();
    if (interrupts > 1) {
      killAllChildren();
      rmSync(tmp, { recursive: true, force: true });
      process.exit(130);
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const removeTmp = (): void => rmSync(tmp, { recursive: true, force: true });
  process.on('exit', removeTmp);

  const progress = new ProgressLine(
    io.stderr,
    options.progress === 'auto' ? (io.stderr.isTTY ? 'tty' : 'plain') : options.progress,
  );
  const startedMs = clock.now();
  const results: PhaseResult[] = [];
  let aborted = false;
  try {
    const makeDataplane = async (id: PhaseId): Promise<PhaseDataplane> => {
      switch (id) {
        case 'pinned':
          if (options.dataplane === 'netfilter') {
            return netfilterDataplane(await netfilter.create({ vip: SERVICE_VIP, port: SERVICE_PORT }));
          }
          return agentDataplane(false);
        case 'client':
          return agentDataplane(true);
        case 'proxy':
          return proxyDataplane(tmp, clock);
        case 'recycler':
          if (options.dataplane === 'netfilter') {
            const ns = await netfilter.create({ vip: SERVICE_VIP, port: SERVICE_PORT });
            return withPeersFile(netfilterDataplane(ns), tmp, FAIR_SHARE_ARGS);
          }
          return withPeersFile(agentDataplane(false), tmp, FAIR_SHARE_ARGS);
        case 'sidecar': {
          const base =
            options.dataplane === 'netfilter'
              ? netfilterDataplane(await netfilter.create({ vip: SERVICE_VIP, port: SERVICE_PORT }))
              : agentDataplane(false);
          const loadPort = await freePort('127.0.0.1');
          return sidecarPods(withPeersFile(base, tmp, [...SIDECAR_ARGS, '--load-port', String(loadPort)]));
        }
        case 'recycler-age':
          if (options.dataplane === 'netfilter') {
            const ns = await netfilter.create({ vip: SERVICE_VIP, port: SERVICE_PORT });
            return netfilterDataplane(ns, RECYCLE_ARGS);
          }
          return agentDataplane(false, RECYCLE_ARGS);
      }
    };

    say(
      `evenlb demo (run ${runId}): ${options.pods} pods, ${options.clients} clients × ${options.ratePerClient} req/s, ` +
        `${(options.durationMs / 1000).toFixed(0)} s per phase; phases: ${options.phases.join(', ')}`,
    );
    for (const id of options.phases) {
      const info = PHASES[id];
      let result: PhaseResult;
      try {
        const dataplane = await makeDataplane(id);
        result = await runPhase(info, dataplane, {
          pods: options.pods,
          clients: options.clients,
          durationMs: options.durationMs,
          ratePerClient: options.ratePerClient,
          seed: options.seed,
          runId,
          clock,
          signal: abort.signal,
          podAddress: (n) => `127.0.1.${n}`,
          onProgress: (p) => progress.update(p),
        });
      } catch (err) {
        if (err instanceof PhaseAborted) throw err;
        result = {
          id,
          title: info.title,
          explanation: info.explanation,
          status: 'failed',
          reason: err instanceof Error ? err.message : String(err),
        };
      }
      progress.finish();
      results.push(result);
      if (result.status !== 'ok') progress.note(`  ${id.padEnd(8)} ${result.status}: ${result.reason}`);
    }
  } catch (err) {
    if (!(err instanceof PhaseAborted)) throw err;
    aborted = true;
    progress.finish();
    say('evenlb demo: interrupted; every pod, client and proxy is stopped');
  } finally {
    killAllChildren();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    removeTmp();
    process.off('exit', removeTmp);
  }
  if (aborted) return { exitCode: 130, results, runId };

  const totalMs = clock.now() - startedMs;
  io.stdout.write(`\n${results.map(renderPhase).join('\n\n')}\n\n${renderSummary(results)}\n`);
  const report: DemoReportData = {
    generatedAt: new Date().toISOString(),
    options: { ...options },
    totalMs: Math.round(totalMs),
    phases: results,
  };
  const htmlPath = resolve(options.output);
  await writeFile(htmlPath, renderHtmlReport(report));
  io.stdout.write(`\nreport: ${htmlPath}\n`);
  if (options.json !== undefined) {
    await writeFile(resolve(options.json), `${JSON.stringify({ runId, ...report }, null, 2)}\n`);
  }
  const failed = results.some((r) => r.status === 'failed');
  return { exitCode: failed ? 1 : 0, results, runId };
}
