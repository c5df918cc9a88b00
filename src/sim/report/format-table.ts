/**
 * The terminal table of `evenlb sim`: one row per dataplane with max/mean, coefficient of
 * variation, Jain's index, utilization max/mean, how long new pods took to reach 90% of their
 * fair share, p99 and p99.9 latency, load probes per request, reconnects, and each measured
 * pod's load as a multiple of the mean (or min / median / max when there are too many pods
 * for a column each). Plain text, deterministic — no wall-clock figures — so the same seed
 * prints the same table.
 */
import type { Scenario } from '../scenario/scenario-spec.js';
import {
  distributionText as distribution,
  durationText as duration,
  podDynamicsText,
} from '../scenario/scenario-text.js';
import type { SimDataplaneResult, SimReport } from './sim-report.js';

/** Pods shown one column each up to this many; beyond, min / median / max. */
const MAX_POD_COLUMNS = 12;

function seconds(ms: number): string {
  return ms >= 100_000 ? `${(ms / 1000).toFixed(0)} s` : `${(ms / 1000).toFixed(1)} s`;
}

function fixed(v: number, digits: number): string {
  return v.toFixed(digits);
}

function fairShare(r: SimDataplaneResult): string {
  if (r.newPods === 0) return '-';
  return r.newPodsFairShareMs === null ? 'never' : seconds(r.newPodsFairShareMs);
}

function median(sorted: readonly number[]): number {
  const n = sorted.length;
  if (n === 0) return 0;
  const mid = Math.floor(n / 2);
  return n % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** One or two lines saying what actually ran (knobs included), from the validated scenario. */
export function describeSettings(s: Scenario): string[] {
  const p = s.pods;
  const c = s.clients;
  const a = c.arrival;
  const arrival =
    a.type === 'closed-loop'
      ? `closed loop, ${a.concurrency} outstanding`
      : `${a.type === 'poisson' ? 'Poisson' : 'periodic'} ${a.ratePerSecond}/s`;
  const parts = [
    `${p.count} pods × ${p.workers} worker${p.workers === 1 ? '' : 's'} (service ${distribution(p.serviceTime)})`,
    `${c.count ?? c.connections} clients on ${c.nodes} nodes, ${c.connections} connections, ${arrival} each${a.count === undefined ? '' : `, ${a.count} requests`}`,
  ];
  const changes: string[] = [];
  for (const e of s.events ?? []) {
    if (e.type === 'scale') changes.push(`scale to ${e.pods} at ${duration(e.atMs)}`);
    else if (e.type === 'rolling-update') {
      changes.push(
        `rolling update at ${duration(e.atMs)} (maxSurge ${e.maxSurge}, maxUnavailable ${e.maxUnavailable})`,
      );
    } else if (e.type === 'burst') {
      changes.push(
        `bursts of ${e.requestsPerClient}/client${e.everyMs === undefined ? '' : ` every ${duration(e.everyMs)}`} from ${duration(e.atMs)}`,
      );
    }
  }
  const lifetime: string[] = [];
  const cl = c.lifetime;
  if (cl.maxConnectionAgeMs !== undefined)
    lifetime.push(`client max age ${duration(cl.maxConnectionAgeMs)} ±${cl.ageJitter * 100}%`);
  if (cl.maxRequestsPerConnection !== undefined)
    lifetime.push(`client reconnect after ${cl.maxRequestsPerConnection} requests`);
  if (c.connectionLifetime !== undefined) lifetime.push(`sessions ${distribution(c.connectionLifetime)}`);
  const sl = s.server.lifetime;
  if (sl.maxConnectionAgeMs !== undefined) lifetime.push(`server recycles at ${duration(sl.maxConnectionAgeMs)}`);
  if (sl.maxRequestsPerConnection !== undefined)
    lifetime.push(`server recycles after ${sl.maxRequestsPerConnection} requests`);
  const fs = s.server.fairShare;
  if (fs !== undefined) lifetime.push(`server sheds above its fair share +${Number((fs.tolerance * 100).toFixed(1))}%`);
  const second = [...changes, lifetime.length === 0 ? 'no connection lifetime limits' : lifetime.join(', ')];
  const pods = podDynamicsText(s);
  // evenlb's traffic shaping, when it differs from the defaults.
  const shaping: string[] = [];
  if (c.slowStartMs > 0) shaping.push(`slow start ${duration(c.slowStartMs)}`);
  if (!c.herdingGuard) shaping.push('herding guard off');
  if (c.zoneRouting === 'on') shaping.push('zone routing on');
  if (shaping.length > 0) second.push(`evenlb ${shaping.join(', ')}`);
  return [parts.join('; '), second.join('; '), ...(pods.length === 0 ? [] : [pods.join('; ')])];
}

/** The new pods' share per bucket after ready, × fair share, one line per dataplane (none without new pods). */
function rampLines(report: SimReport): string[] {
  const ramps = report.results.filter((r) => r.newPodsOverFair !== null && r.newPodsOverFair.overFair.length > 0);
  if (ramps.length === 0) return [];
  const bucket = seconds(ramps[0]?.newPodsOverFair?.bucketMs ?? 0);
  const width = Math.max(...ramps.map((r) => r.dataplane.length));
  const lines = [
    '',
    `new pods' share in each ${bucket} after ready (× fair share; above 1: a herd, below: not yet reached):`,
  ];
  for (const r of ramps) {
    const cells = (r.newPodsOverFair?.overFair ?? []).map((v) => fixed(v, 2).padStart(5));
    lines.push(`${r.dataplane.padEnd(width)}  ${cells.join(' ')}`);
  }
  return lines;
}

/** Per-zone shares and the cross-zone fraction, one line per dataplane (none without zones). */
function zoneLines(report: SimReport): string[] {
  const zoned = report.results.filter((r) => r.zones !== null);
  if (zoned.length === 0) return [];
  const width = Math.max(...zoned.map((r) => r.dataplane.length));
  const lines = ['', 'zones (share of requests, measured pods) and requests served across zones:'];
  for (const r of zoned) {
    const zones = (r.zones ?? []).map((z) => `${z.zone} ${fixed(z.share * 100, 1)}% (${z.pods})`).join(', ');
    lines.push(`${r.dataplane.padEnd(width)}  ${zones}; cross-zone ${fixed((r.crossZone ?? 0) * 100, 1)}%`);
  }
  return lines;
}

/**
 * Renders the report as an aligned text table (with a trailing newline).
 *
 * @example
 * process.stdout.write(formatTable(runScenario({ scenario, dataplanes, seed: 1 })));
 */
export function formatTable(report: SimReport): string {
  const lines: string[] = [];
  const trials = report.trials === 1 ? '1 trial' : `${report.trials} trials (figures are means over trials)`;
  lines.push(`evenlb sim: ${report.scenario} (seed ${report.seed}, ${trials})`);
  if (report.description !== '') lines.push(report.description);
  lines.push(...describeSettings(report.settings));
  const w = report.window;
  let window = `measured ${seconds(w.fromMs)} to ${seconds(w.toMs)} of simulated time`;
  if (report.changeAtMs !== null)
    window += `; change at ${seconds(report.changeAtMs)}, settled at ${seconds(report.settledAtMs)}`;
  lines.push(window, '');

  const first = report.results[0];
  const podNames = first === undefined ? [] : first.pods.filter((p) => p.measured).map((p) => p.name);
  const perPod = podNames.length <= MAX_POD_COLUMNS;
  const multiTrial = report.trials > 1;
  const header = [
    'dataplane',
    'max/mean',
    ...(multiTrial ? ['sd'] : []),
    'CoV',
    'Jain',
    'util max/mean',
    'new pods 90%',
    'p99 ms',
    'p99.9 ms',
    'probes/req',
    'reconn/min',
  ];
  const podHeader = perPod ? podNames : ['min', 'median', 'max'];
  const rows: string[][] = [];
  let hashFootnote = false;
  for (const r of report.results) {
    const hash = r.policyKind === 'hash';
    hashFootnote ||= hash;
    const overMeans = r.pods.filter((p) => p.measured).map((p) => p.overMean);
    const sorted = [...overMeans].sort((a, b) => a - b);
    const podCells = perPod
      ? overMeans.map((v) => fixed(v, 2))
      : [fixed(sorted[0] ?? 0, 2), fixed(median(sorted), 2), fixed(sorted[sorted.length - 1] ?? 0, 2)];
    rows.push([
      `${r.dataplane}${hash ? ' *' : ''}`,
      fixed(r.maxOverMean, 2),
      ...(multiTrial ? [fixed(r.maxOverMeanTrials?.stdev ?? 0, 2)] : []),
      fixed(r.cov, 2),
      fixed(r.jain, 2),
      fixed(r.utilizationMaxOverMean, 2),
      fairShare(r),
      r.latencyMs === null ? '-' : fixed(r.latencyMs.p99, 1),
      r.latencyMs === null ? '-' : fixed(r.latencyMs.p999, 1),
      fixed(r.probes.perRequest, 3),
      r.reconnectsPerMinute === null ? '-' : fixed(r.reconnectsPerMinute, 1),
      ...podCells,
    ]);
  }
  const all = [[...header, ...podHeader], ...rows];
  const over = multiTrial ? ', all trials together' : '';
  const podTitle = perPod
    ? `load per pod (× mean${over})`
    : `load per pod (× mean${over}) over ${podNames.length} pods`;
  const widths = all[0]?.map((_, c) => Math.max(...all.map((row) => (row[c] ?? '').length))) ?? [];
  const render = (row: readonly string[]) =>
    row
      .map((cell, c) => (c === 0 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0)))
      .join('  ')
      .trimEnd();
  lines.push(`${' '.repeat(header.map((_, c) => (widths[c] ?? 0) + 2).reduce((a, b) => a + b, 0))}${podTitle}`);
  lines.push(render(all[0] as string[]));
  for (const row of rows) lines.push(render(row));
  lines.push(...rampLines(report), ...zoneLines(report));
  lines.push('');
  lines.push(
    'max/mean: busiest pod over the mean (1 = even); CoV: coefficient of variation; Jain: fairness index (1 = even);',
  );
  lines.push(
    'util max/mean: busiest pod’s utilization (busy workers over workers, in the window) over the mean — even load for unequal pods;',
  );
  lines.push('new pods 90%: time from the first new pod being ready until new pods took 90% of their fair share;');
  lines.push(
    'p99 / p99.9 ms: send-to-response latency percentiles; probes/req: load probes sent per request (0: none);',
  );
  lines.push(
    'reconn/min: connections dialled in the window per minute (- : per-request dataplane, no connections modelled).',
  );
  if (hashFootnote) {
    lines.push(
      '* hash policy: maps request keys to pods (affinity); its spread follows the keys and the hash table, not the load.',
    );
  }
  return `${lines.join('\n')}\n`;
}
