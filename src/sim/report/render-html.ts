/**
 * `evenlb sim --html FILE`: one self-contained page — Chart.js inlined from the installed
 * package (read at run time, no CDN), the report inlined as JSON — with the summary table,
 * each pod's load as a multiple of the mean with the dataplanes side by side, the new pods'
 * share after ready (× fair, per bucket), per-zone shares, per-pod load over time for every
 * dataplane and, when given, the balance-versus-reconnects curve of server-side recycling
 * (`recycling-curve.ts`). It opens offline, from a file, anywhere.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { RecyclingCurve } from './recycling-curve.js';
import type { SimReport } from './sim-report.js';

/** What the page shows beyond the report itself. */
export interface HtmlExtras {
  /** The scenario's balance-versus-reconnects curve (age ladder and fair-share tolerances). */
  readonly recyclingCurve?: RecyclingCurve;
}

let chartSource: string | undefined;

/** The Chart.js UMD bundle from node_modules (`chart.js/dist/chart.umd.js`). */
export function chartJsSource(): string {
  if (chartSource === undefined) {
    const require = createRequire(import.meta.url);
    // The package exports only its module entry points; the UMD bundle sits next to them.
    const entry = require.resolve('chart.js');
    chartSource = readFileSync(join(dirname(entry), 'chart.umd.js'), 'utf8');
  }
  return chartSource;
}

/** JSON safe inside a `<script>` element. */
function inlineJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Only what the page draws: results without the scenario settings. */
function pageData(report: SimReport, extras: HtmlExtras): unknown {
  return {
    recyclingCurve: extras.recyclingCurve ?? null,
    scenario: report.scenario,
    seed: report.seed,
    trials: report.trials,
    window: report.window,
    changeAtMs: report.changeAtMs,
    results: report.results.map((r) => ({
      dataplane: r.dataplane,
      policyKind: r.policyKind,
      maxOverMean: r.maxOverMean,
      cov: r.cov,
      jain: r.jain,
      newPods: r.newPods,
      newPodsFairShareMs: r.newPodsFairShareMs,
      utilizationMaxOverMean: r.utilizationMaxOverMean,
      p99: r.latencyMs?.p99 ?? null,
      p999: r.latencyMs?.p999 ?? null,
      probesPerRequest: r.probes.perRequest,
      reconnectsPerMinute: r.reconnectsPerMinute,
      newPodsOverFair: r.newPodsOverFair,
      crossZone: r.crossZone,
      zones: r.zones,
      pods: r.pods.filter((p) => p.measured).map((p) => ({ name: p.name, overMean: p.overMean })),
      series: r.series,
      lifetimes: Object.fromEntries(r.pods.map((p) => [p.name, [p.readyAtMs, p.removedAtMs]])),
    })),
  };
}

const PAGE_SCRIPT = `
const data = JSON.parse(document.getElementById('sim-data').textContent);
const palette = ['#2563eb','#dc2626','#16a34a','#d97706','#7c3aed','#0891b2','#db2777','#65a30d','#ea580c','#4f46e5','#0d9488','#be123c'];
const color = (i) => palette[i % palette.length];
const fmt = (v, d) => (v === null || v === undefined ? '-' : Number(v).toFixed(d));
const secs = (ms) => (ms === null ? 'never' : (ms / 1000).toFixed(1) + ' s');

const tbody = document.querySelector('#summary tbody');
for (const r of data.results) {
  const tr = document.createElement('tr');
  const cells = [r.dataplane + (r.policyKind === 'hash' ? ' *' : ''), fmt(r.maxOverMean, 2), fmt(r.cov, 2), fmt(r.jain, 2), fmt(r.utilizationMaxOverMean, 2),
    r.newPods === 0 ? '-' : secs(r.newPodsFairShareMs), fmt(r.p99, 1), fmt(r.p999, 1), fmt(r.probesPerRequest, 3),
    fmt(r.reconnectsPerMinute, 1),
    r.crossZone === null ? '-' : fmt(r.crossZone * 100, 1) + '%'];
  for (const c of cells) { const td = document.createElement('td'); td.textContent = c; tr.appendChild(td); }
  tbody.appendChild(tr);
}

const podNames = data.results.length ? data.results[0].pods.map((p) => p.name) : [];
if (podNames.length > 0 && podNames.length <= 64) {
  new Chart(document.getElementById('shares'), {
    type: 'bar',
    data: {
      labels: podNames,
      datasets: data.results.map((r, i) => ({ label: r.dataplane, data: r.pods.map((p) => p.overMean), backgroundColor: color(i) })),
    },
    options: { animation: false, responsive: true, plugins: { title: { display: true, text: 'Load per pod in the measured window (× mean; 1 = fair share)' } },
      scales: { y: { beginAtZero: true, title: { display: true, text: '× mean' } } } },
  });
} else {
  new Chart(document.getElementById('shares'), {
    type: 'bar',
    data: { labels: data.results.map((r) => r.dataplane), datasets: [{ label: 'max/mean', data: data.results.map((r) => r.maxOverMean), backgroundColor: color(0) }] },
    options: { animation: false, plugins: { title: { display: true, text: 'Busiest pod over the mean (' + podNames.length + ' pods)' } }, scales: { y: { beginAtZero: true } } },
  });
}

const ramps = data.results.filter((r) => r.newPodsOverFair && r.newPodsOverFair.overFair.length > 0);
if (ramps.length > 0) {
  const bucket = ramps[0].newPodsOverFair.bucketMs;
  const n = Math.max(...ramps.map((r) => r.newPodsOverFair.overFair.length));
  new Chart(document.getElementById('ramp'), {
    type: 'line',
    data: {
      labels: Array.from({ length: n }, (_, i) => ((i + 1) * bucket / 1000).toFixed(bucket < 1000 ? 1 : 0)),
      datasets: ramps.map((r, i) => ({ label: r.dataplane, data: r.newPodsOverFair.overFair, borderColor: color(i), pointRadius: 2 })),
    },
    options: { animation: false, responsive: true,
      plugins: { title: { display: true, text: "New pods' share after they became ready (× fair share; above 1: a herd)" } },
      scales: { x: { title: { display: true, text: 'seconds after ready (end of bucket)' } }, y: { beginAtZero: true, title: { display: true, text: '× fair share' } } } },
  });
} else {
  document.getElementById('ramp-box').remove();
}

const curve = data.recyclingCurve;
if (curve) {
  // Log scale: a point with no reconnects at all is drawn at 0.1/min.
  const point = (p) => ({ x: Math.max(p.reconnectsPerMinute, 0.1), y: p.maxOverMean, setting: p.setting });
  const ages = curve.points.filter((p) => p.recycling === 'age').map(point);
  const fair = curve.points.filter((p) => p.recycling === 'fair-share').map(point);
  new Chart(document.getElementById('curve'), {
    type: 'scatter',
    data: { datasets: [
      { label: 'age-based (--server-max-age)', data: ages, borderColor: color(1), backgroundColor: color(1), showLine: true, pointRadius: 4 },
      { label: 'fair-share (--server-fair-share tolerance)', data: fair, borderColor: color(0), backgroundColor: color(0), showLine: true, pointRadius: 4 },
    ] },
    options: { animation: false, responsive: true,
      plugins: {
        title: { display: true, text: 'Balance vs reconnects through ' + curve.dataplane + ' (without recycling: max/mean ' + fmt(curve.none.maxOverMean, 2) + ')' },
        tooltip: { callbacks: { label: (c) => (c.datasetIndex === 0 ? 'age ' + c.raw.setting / 1000 + ' s' : 'tolerance ' + c.raw.setting) + ': max/mean ' + fmt(c.raw.y, 3) + ', ' + fmt(c.raw.x, 1) + ' reconnects/min' } },
      },
      scales: { x: { type: 'logarithmic', title: { display: true, text: 'reconnects per minute (log)' } }, y: { title: { display: true, text: 'max/mean' } } } },
  });
  const ct = document.createElement('table');
  ct.innerHTML = '<thead><tr><th>recycling</th><th>max/mean</th><th>reconnects/min</th></tr></thead>';
  const cb = document.createElement('tbody');
  const rows = [['none', curve.none.maxOverMean, curve.none.reconnectsPerMinute]].concat(curve.points.map((p) =>
    [p.recycling === 'age' ? '--server-max-age ' + p.setting / 1000 + 's' : '--server-fair-share ' + p.setting, p.maxOverMean, p.reconnectsPerMinute]));
  for (const [name, m, r] of rows) {
    const tr = document.createElement('tr');
    for (const c of [name, fmt(m, 3), fmt(r, 1)]) { const td = document.createElement('td'); td.textContent = c; tr.appendChild(td); }
    cb.appendChild(tr);
  }
  ct.appendChild(cb);
  document.getElementById('curve-box').appendChild(ct);
} else {
  document.getElementById('curve-box').remove();
}

const zoned = data.results.filter((r) => r.zones);
if (zoned.length > 0) {
  const zt = document.createElement('table');
  const names = zoned[0].zones.map((z) => z.zone);
  zt.innerHTML = '<thead><tr><th>dataplane</th>' + names.map((n) => '<th>' + n + '</th>').join('') + '<th>cross-zone</th></tr></thead>';
  const body = document.createElement('tbody');
  for (const r of zoned) {
    const tr = document.createElement('tr');
    const cells = [r.dataplane, ...r.zones.map((z) => fmt(z.share * 100, 1) + '% (' + z.pods + ' pods)'), fmt(r.crossZone * 100, 1) + '%'];
    for (const c of cells) { const td = document.createElement('td'); td.textContent = c; tr.appendChild(td); }
    body.appendChild(tr);
  }
  zt.appendChild(body);
  document.getElementById('zones').appendChild(zt);
}

const grid = document.getElementById('timelines');
for (const r of data.results) {
  if (!r.series || r.series.pods.length === 0) continue;
  const box = document.createElement('div');
  box.className = 'chart';
  const canvas = document.createElement('canvas');
  box.appendChild(canvas);
  grid.appendChild(box);
  const bucket = r.series.bucketMs;
  const buckets = Math.max(...r.series.pods.map((p) => p.requests.length));
  const labels = Array.from({ length: buckets }, (_, b) => ((b * bucket) / 1000).toFixed(bucket < 1000 ? 1 : 0));
  const perSecond = (v) => (v / data.trials) * (1000 / bucket);
  let datasets;
  if (r.series.pods.length <= 24) {
    datasets = r.series.pods.map((p, i) => ({ label: p.name, data: p.requests.map(perSecond), borderColor: color(i), pointRadius: 0, borderWidth: 1.5 }));
  } else {
    const mins = [], meds = [], maxs = [];
    for (let b = 0; b < buckets; b++) {
      const start = b * bucket, end = start + bucket;
      const vals = [];
      for (const p of r.series.pods) {
        const life = r.lifetimes[p.name];
        const ready = life && life[0] !== null && life[0] <= start && (life[1] === null || life[1] >= end);
        if (ready) vals.push(perSecond(p.requests[b] || 0));
      }
      vals.sort((a, x) => a - x);
      mins.push(vals.length ? vals[0] : null);
      meds.push(vals.length ? vals[Math.floor(vals.length / 2)] : null);
      maxs.push(vals.length ? vals[vals.length - 1] : null);
    }
    datasets = [
      { label: 'max pod', data: maxs, borderColor: color(1), pointRadius: 0 },
      { label: 'median pod', data: meds, borderColor: color(0), pointRadius: 0 },
      { label: 'min pod', data: mins, borderColor: color(2), pointRadius: 0 },
    ];
  }
  new Chart(canvas, {
    type: 'line',
    data: { labels, datasets },
    options: { animation: false, responsive: true,
      plugins: { title: { display: true, text: r.dataplane + ' (max/mean ' + fmt(r.maxOverMean, 2) + ')' }, legend: { labels: { boxWidth: 10 } } },
      scales: { x: { title: { display: true, text: 'simulated time (s)' } }, y: { beginAtZero: true, title: { display: true, text: 'requests/s' } } } },
  });
}
`;

/**
 * The report as a self-contained HTML page.
 *
 * @example
 * writeFileSync('sim.html', renderHtml(report));
 * writeFileSync('sim.html', renderHtml(report, { recyclingCurve: recyclingCurve(run, 'iptables') }));
 */
export function renderHtml(report: SimReport, extras: HtmlExtras = {}): string {
  const title = `evenlb sim: ${report.scenario}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #111827; }
h1 { font-size: 1.4rem; margin-bottom: 0.2rem; }
p.meta { color: #4b5563; margin-top: 0; }
table { border-collapse: collapse; margin: 1rem 0; font-variant-numeric: tabular-nums; }
th, td { padding: 0.25rem 0.7rem; border-bottom: 1px solid #e5e7eb; text-align: right; }
th:first-child, td:first-child { text-align: left; }
#shares-box, #ramp-box, #curve-box { max-width: 1100px; }
#timelines { display: grid; grid-template-columns: repeat(auto-fill, minmax(440px, 1fr)); gap: 1rem; }
.chart { border: 1px solid #e5e7eb; border-radius: 6px; padding: 0.5rem; }
</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
<p class="meta">${escapeHtml(report.description)}<br>seed ${report.seed}, ${report.trials} trial(s); measured ${(report.window.fromMs / 1000).toFixed(1)} s to ${(report.window.toMs / 1000).toFixed(1)} s of simulated time</p>
<table id="summary"><thead><tr><th>dataplane</th><th>max/mean</th><th>CoV</th><th>Jain</th><th>util max/mean</th><th>new pods 90%</th><th>p99 ms</th><th>p99.9 ms</th><th>probes/req</th><th>reconnects/min</th><th>cross-zone</th></tr></thead><tbody></tbody></table>
<div id="zones"></div>
<div id="shares-box"><canvas id="shares"></canvas></div>
<div id="ramp-box"><canvas id="ramp"></canvas></div>
<div id="curve-box"><h2>Server-side recycling: balance vs reconnects</h2><canvas id="curve"></canvas></div>
<h2>Load per pod over time</h2>
<div id="timelines"></div>
<script id="sim-data" type="application/json">${inlineJson(pageData(report, extras))}</script>
<script>${chartJsSource()}</script>
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`;
}
