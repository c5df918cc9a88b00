/**
 * The demo's HTML report: one self-contained page (chart.js and the data inlined, no network)
 * with, per phase, what ran and why it matters, a chart of each pod's request rate over time
 * (scale-out and restarts marked), and the per-pod table.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { PhaseResult } from './phase-result.js';

export interface DemoReportData {
  readonly generatedAt: string;
  readonly options: Readonly<Record<string, unknown>>;
  readonly totalMs: number;
  readonly phases: readonly PhaseResult[];
}

function chartJsSource(): string {
  // chart.js's `exports` map hides dist/chart.umd.js; it sits beside the CommonJS entry.
  const main = createRequire(import.meta.url).resolve('chart.js');
  return readFileSync(join(dirname(main), 'chart.umd.js'), 'utf8');
}

/** Makes text safe inside a <script> element. */
function scriptSafe(text: string): string {
  return text.replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\!--');
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function pct(x: number | undefined): string {
  return x === undefined ? '–' : `${(x * 100).toFixed(1)}%`;
}

function phaseSection(r: PhaseResult, index: number): string {
  const head = `<h2>${escapeHtml(r.title)}</h2><p>${escapeHtml(r.explanation)}</p>`;
  if (r.status !== 'ok') {
    return `<section class="phase">${head}<p class="failed">${escapeHtml(r.status)}: ${escapeHtml(r.reason)}</p></section>`;
  }
  const rows = r.pods
    .map(
      (p) =>
        `<tr><td>${escapeHtml(p.name)}</td><td>${p.role}</td><td>${escapeHtml(`${p.address}:${p.port}`)}</td>` +
        `<td>${p.requests}</td><td>${p.connections}</td><td>${pct(p.steadyShare)}</td><td>${pct(p.afterScaleOutShare)}</td></tr>`,
    )
    .join('');
  const figures =
    `max/mean <b>${r.maxOverMean.toFixed(2)}</b> · CoV <b>${r.cov.toFixed(2)}</b> · Jain <b>${r.jain.toFixed(3)}</b> · ` +
    `new pod after scale-out <b>${(r.newPodShareOfFair * 100).toFixed(0)}%</b> of its fair share · ` +
    `failed requests <b>${r.failedRequests}</b> of ${r.okRequests + r.failedRequests}`;
  return `<section class="phase">${head}<p class="via">via: ${escapeHtml(r.dataplane)}</p>
<p class="figures">${figures}</p>
<div class="chart"><canvas id="chart-${index}" data-phase="${r.id}"></canvas></div>
<table><thead><tr><th>pod</th><th>role</th><th>address</th><th>requests</th><th>connections</th><th>steady share</th><th>after scale-out</th></tr></thead><tbody>${rows}</tbody></table>
</section>`;
}

const CHART_SCRIPT = `
const data = JSON.parse(document.getElementById('demo-data').textContent);
const palette = ['#1f77b4','#ff7f0e','#2ca02c','#d62728','#9467bd','#8c564b','#e377c2','#7f7f7f','#bcbd22','#17becf'];
const eventLines = {
  id: 'eventLines',
  afterDatasetsDraw(chart, _args, opts) {
    const { ctx, chartArea, scales } = chart;
    ctx.save();
    ctx.strokeStyle = '#555'; ctx.setLineDash([4, 4]); ctx.fillStyle = '#333'; ctx.font = '11px sans-serif';
    for (const e of opts.events || []) {
      const x = scales.x.getPixelForValue(e.tMs / 1000);
      if (x < chartArea.left || x > chartArea.right) continue;
      ctx.beginPath(); ctx.moveTo(x, chartArea.top); ctx.lineTo(x, chartArea.bottom); ctx.stroke();
    }
    ctx.restore();
  },
};
data.phases.forEach((phase, i) => {
  if (phase.status !== 'ok') return;
  const canvas = document.getElementById('chart-' + i);
  const names = Object.keys(phase.series.ratesByPod);
  const datasets = names.map((name, j) => ({
    label: name,
    data: phase.series.tMs.map((t, k) => ({ x: t / 1000, y: phase.series.ratesByPod[name][k] })),
    borderColor: palette[j % palette.length],
    backgroundColor: palette[j % palette.length],
    borderWidth: 2, pointRadius: 0, spanGaps: false, tension: 0,
  }));
  new Chart(canvas, {
    type: 'line',
    data: { datasets },
    options: {
      animation: false, responsive: true, maintainAspectRatio: false, parsing: true,
      scales: {
        x: { type: 'linear', title: { display: true, text: 'seconds into the phase' } },
        y: { beginAtZero: true, title: { display: true, text: 'requests/s per pod' } },
      },
      plugins: {
        legend: { position: 'right' },
        title: { display: true, text: phase.title },
        eventLines: { events: phase.events },
        tooltip: { mode: 'nearest', intersect: false },
      },
    },
    plugins: [eventLines],
  });
});
document.body.dataset.chartsDrawn = 'true';
`;

/** The whole page as a string. */
export function renderHtmlReport(data: DemoReportData): string {
  const sections = data.phases.map((r, i) => phaseSection(r, i)).join('\n');
  const json = JSON.stringify(data).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>evenlb demo report</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#222}
h1{margin-bottom:.2rem} .meta{color:#666;margin-top:0}
section.phase{border-top:1px solid #ddd;margin-top:2rem;padding-top:.5rem}
.chart{position:relative;height:320px} .via{color:#555;font-style:italic} .failed{color:#a40;font-weight:bold}
table{border-collapse:collapse;margin-top:1rem;font-size:.9rem} th,td{padding:.2rem .6rem;border-bottom:1px solid #eee;text-align:right}
th:first-child,td:first-child,th:nth-child(2),td:nth-child(2),th:nth-child(3),td:nth-child(3){text-align:left}
</style></head><body>
<h1>evenlb demo</h1>
<p class="meta">${escapeHtml(data.generatedAt)} · ${data.phases.length} phases · ${(data.totalMs / 1000).toFixed(1)} s · options ${escapeHtml(JSON.stringify(data.options))}</p>
<p>Real pods (one process each, own loopback address), real keep-alive clients, one scale-out and one rolling
restart per phase. Shares are measured from the pods' own request counters. max/mean, CoV and Jain's index
are over the initial pods before the scale-out; the new pod's share is between the scale-out and the
rolling restart, as a percentage of a fair 1/(pods+1). Dashed lines mark the scale-out and each pod replaced.</p>
${sections}
<script id="demo-data" type="application/json">${json}</script>
<script>${scriptSafe(chartJsSource())}</script>
<script>${CHART_SCRIPT}</script>
</body></html>
`;
}
