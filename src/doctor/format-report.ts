/**
 * The readable `evenlb doctor` report: the headline figures, a table of pods (load against the
 * mean, connections, age, zone, restarts), the verdict with its evidence, and the cures with
 * their settings and the simulator's predicted max/mean and reconnects per minute.
 */
import type { CureAdvice } from './prescribe.js';
import type { DoctorReport } from './run-doctor.js';

const f2 = (v: number): string => v.toFixed(2);

function age(ms: number | undefined): string {
  if (ms === undefined) return '-';
  if (ms < 120_000) return `${Math.round(ms / 1000)}s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)}m`;
  if (ms < 172_800_000) return `${Math.round(ms / 3_600_000)}h`;
  return `${Math.round(ms / 86_400_000)}d`;
}

function table(header: readonly string[], rows: readonly (readonly string[])[], rightFrom = 1): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i >= rightFrom ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

function mark(c: CureAdvice, chosen: string | null, serverSide: string | null): string {
  return c.id === chosen ? '*' : c.id === serverSide ? '+' : ' ';
}

function cureRow(c: CureAdvice, chosen: string | null, serverSide: string | null): string[] {
  const p = c.predicted;
  return [
    `${mark(c, chosen, serverSide)} ${c.title}`,
    p === null ? '-' : f2(p.maxOverMean),
    p === null ? '-' : p.reconnectsPerMinute.toFixed(1),
    c.applicable ? 'yes' : 'no',
  ];
}

/** Formats a report as text for a terminal. */
export function formatDoctorReport(r: DoctorReport): string {
  const out: string[] = [];
  const f = r.figures;
  out.push(
    `Service ${r.service.namespace}/${r.service.name} — ${f.readyPods} ready pods, ${f.requestsPerSecond} req/s`,
  );
  const k = r.kubeProxy;
  out.push(
    `kube-proxy: ${k.mode === undefined ? 'unknown' : `${k.mode}${k.scheduler === undefined ? '' : `/${k.scheduler}`}`} (${k.source}); ` +
      `trafficDistribution: ${r.service.trafficDistribution ?? 'not set'}` +
      (r.load.evenlbServer === null ? '' : `; evenlb server metrics: ${r.load.evenlbServer ? 'yes' : 'none'}`),
  );
  out.push(
    `load: ${r.load.metric}${r.load.connectionsMetric === null ? '' : `, connections: ${r.load.connectionsMetric}`} (${r.load.source})`,
  );
  out.push(`max/mean ${f2(f.maxOverMean)}   CoV ${f2(f.cov)}   Jain ${f2(f.jain)}`);
  if (f.newestPods !== null) {
    const n = f.newestPods;
    out.push(
      `newest pods: ${n.pods.length} created ${age(n.gapMs)} after the rest take ${Math.round(n.shareOfFair * 100)}% of their fair share`,
    );
  }
  if (f.zones.length >= 2) {
    out.push(`zones: ${f.zones.map((z) => `${z.zone} ${z.pods} pods at ${f2(z.overMean)}× the mean`).join(', ')}`);
  }
  out.push('');
  out.push(
    ...table(
      ['pod', '× mean', 'req/s', 'conns', 'age', 'ready for', 'zone', 'node', 'restarts'],
      r.pods.map((p) => [
        p.name,
        f2(p.overMean),
        p.requestsPerSecond.toFixed(1),
        p.connections === undefined ? '-' : String(p.connections),
        age(p.ageMs),
        age(p.readyForMs),
        p.zone ?? '-',
        p.node ?? '-',
        String(p.restarts),
      ]),
    ),
  );
  out.push('');
  out.push(`verdict: ${r.diagnosis.cause} — ${r.diagnosis.summary}`);
  for (const e of r.diagnosis.evidence) out.push(`  - ${e}`);
  const p = r.prescription;
  if (p !== null) {
    out.push('');
    out.push(`cures (simulated on this Service; target max/mean <= ${p.target}):`);
    const rows = [p.asIs, ...p.cures].map((c) => cureRow(c, p.chosen, p.serverSide));
    out.push(...table(['cure', 'max/mean', 'reconnects/min', 'applies'], rows).map((l) => `  ${l}`));
    out.push('');
    if (p.asIs.note !== undefined) out.push(`  ${p.asIs.title}: ${p.asIs.note}`);
    for (const c of p.cures) {
      const m = mark(c, p.chosen, p.serverSide);
      out.push(`  ${m === ' ' ? '-' : m} ${c.title}: ${c.settings}`);
      if (c.manifest !== undefined) out.push(`      manifest: ${c.manifest}`);
      if (c.note !== undefined) out.push(`      ${c.note}`);
    }
    out.push(`  assumptions: ${p.assumptions.join('; ')}`);
    if (p.chosen !== null) out.push(`  recommended (*): ${p.cures.find((c) => c.id === p.chosen)?.title}`);
    if (p.serverSide !== null && p.serverSide !== p.chosen)
      out.push(`  server side, callers unchanged (+): ${p.cures.find((c) => c.id === p.serverSide)?.title}`);
  }
  for (const w of r.warnings) out.push(`warning: ${w}`);
  if (r.failAbove !== null) {
    out.push(
      r.failed
        ? `FAIL: max/mean ${f2(f.maxOverMean)} is above ${r.failAbove}`
        : `ok: max/mean ${f2(f.maxOverMean)} is at or below ${r.failAbove}`,
    );
  }
  return `${out.join('\n')}\n`;
}
