/**
 * The tables printed at the end of a demo run: one per phase (each pod's requests and shares),
 * then a summary with one line per phase.
 */
import type { ClientFigures, PhaseResult } from './phase-result.js';

function pct(x: number | undefined): string {
  return x === undefined ? '-' : `${(x * 100).toFixed(1)}%`;
}

function table(rows: readonly (readonly string[])[], rightAligned: ReadonlySet<number>): string {
  const widths: number[] = [];
  for (const r of rows) {
    r.forEach((c, i) => {
      widths[i] = Math.max(widths[i] ?? 0, c.length);
    });
  }
  return rows
    .map((r) =>
      r
        .map((c, i) => (rightAligned.has(i) ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** One phase's table. */
export function renderPhase(r: PhaseResult): string {
  const head = `== ${r.title} ==`;
  if (r.status !== 'ok') return `${head}\n  ${r.status}: ${r.reason}`;
  const rows: string[][] = [['pod', 'role', 'address', 'requests', 'conns', 'steady share', 'after scale-out']];
  for (const p of r.pods) {
    rows.push([
      p.name,
      p.role,
      `${p.address}:${p.port}`,
      String(p.requests),
      String(p.connections),
      pct(p.steadyShare),
      pct(p.afterScaleOutShare),
    ]);
  }
  const errors = Object.entries(r.errorsByCode)
    .map(([k, v]) => `${k}×${v}`)
    .join(', ');
  const lines = [
    head,
    `  via: ${r.dataplane}`,
    table(rows, new Set([3, 4, 5, 6]))
      .split('\n')
      .map((l) => `  ${l}`)
      .join('\n'),
    `  max/mean ${r.maxOverMean.toFixed(2)}  CoV ${r.cov.toFixed(2)}  Jain ${r.jain.toFixed(3)}  ` +
      `new pod after scale-out: ${(r.newPodShareOfFair * 100).toFixed(0)}% of its fair share  ` +
      `failed ${r.failedRequests} of ${r.okRequests + r.failedRequests}${errors === '' ? '' : ` (${errors})`}`,
    `  ${clientLine(r.clients)}`,
  ];
  return lines.join('\n');
}

/** The clients' pace and latencies in one line. */
function clientLine(c: ClientFigures): string {
  const pace = c.nominalRequestsPerSecond > 0 ? c.sentRequestsPerSecond / c.nominalRequestsPerSecond : 0;
  const l = c.latencyMs;
  const latency =
    l === undefined
      ? ''
      : `; latency p50 ${l.p50.toFixed(1)} ms, p90 ${l.p90.toFixed(1)} ms, p99 ${l.p99.toFixed(1)} ms, max ${l.max.toFixed(0)} ms`;
  return `clients sent ${c.sentRequestsPerSecond.toFixed(0)} req/s of ${c.nominalRequestsPerSecond} nominal (${(pace * 100).toFixed(0)}%)${latency}`;
}

/** The closing summary: one line per phase. */
export function renderSummary(results: readonly PhaseResult[]): string {
  const rows: string[][] = [['phase', 'max/mean', 'CoV', 'new pod (of fair)', 'failed', 'requests']];
  const notes: string[] = [];
  for (const r of results) {
    if (r.status !== 'ok') {
      rows.push([r.id, '-', '-', '-', '-', '-']);
      notes.push(`${r.id}: ${r.status}: ${r.reason}`);
      continue;
    }
    rows.push([
      r.id,
      r.maxOverMean.toFixed(2),
      r.cov.toFixed(2),
      `${(r.newPodShareOfFair * 100).toFixed(0)}%`,
      String(r.failedRequests),
      String(r.okRequests + r.failedRequests),
    ]);
  }
  return [table(rows, new Set([1, 2, 3, 4, 5])), ...notes].join('\n');
}
