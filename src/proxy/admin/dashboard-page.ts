/**
 * The live dashboard served at the admin listener's `/`: one self-contained HTML page that
 * loads chart.js from `/assets/chart.umd.js`, polls `/api/stats` once a second and draws, per
 * cluster, each endpoint's request rate and open connections over the last minutes, the
 * sliding-window imbalance (max/mean and Jain's index), and a table with in-flight requests,
 * errors, endpoint state and latency: the measured p50 and p99 over the sliding window (from the
 * upstream latency histogram), and, labelled as such, the balancer's own EWMA estimate, which
 * is what picks use and not a measurement. It reads `ProxyClusterStats` (the clusters' one stats
 * model, see `proxy-metrics.ts`) as `/api/stats` serves it. No build step: the page's script is plain ES2020;
 * the empty data: icon keeps the browser from asking for /favicon.ico.
 */

export const dashboardHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>evenlb proxy</title>
<link rel="icon" href="data:,">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { font: 14px system-ui, sans-serif; margin: 16px; color: #1d2330; background: #f7f8fa; }
  h1 { font-size: 20px; margin: 0 0 4px; }
  h2 { font-size: 16px; margin: 24px 0 8px; }
  .sub { color: #5b6474; margin-bottom: 12px; }
  .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 12px; }
  .card { background: #fff; border: 1px solid #dde1e8; border-radius: 6px; padding: 10px; }
  .card h3 { font-size: 13px; margin: 0 0 6px; color: #3a4252; }
  canvas { width: 100% !important; height: 220px !important; }
  table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
  th, td { text-align: right; padding: 3px 8px; border-bottom: 1px solid #eef0f4; }
  th:first-child, td:first-child { text-align: left; }
  .bad { color: #b3261e; font-weight: 600; }
  .kpi { font-size: 22px; font-weight: 600; }
</style>
</head>
<body>
<h1>evenlb proxy</h1>
<div class="sub">Per-endpoint load, refreshed every second. <span id="status">connecting…</span></div>
<div id="clusters"></div>
<script src="/assets/chart.umd.js"></script>
<script>
(function () {
  var HISTORY = 120;
  var COLORS = ['#3366cc', '#dc3912', '#ff9900', '#109618', '#990099', '#0099c6', '#dd4477', '#66aa00', '#b82e2e', '#316395'];
  var views = {};
  var prev = null;
  window.__evenlbUpdates = 0;

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function lineChart(canvas, title, yTitle) {
    return new Chart(canvas, {
      type: 'line',
      data: { labels: [], datasets: [] },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        plugins: { title: { display: false, text: title }, legend: { position: 'bottom' } },
        scales: { x: { ticks: { maxTicksLimit: 8 } }, y: { beginAtZero: true, title: { display: true, text: yTitle } } },
        elements: { point: { radius: 0 }, line: { borderWidth: 2, tension: 0.2 } },
      },
    });
  }

  function card(parent, title) {
    var c = el('div', { class: 'card' });
    c.appendChild(el('h3', {}, title));
    parent.appendChild(c);
    return c;
  }

  function view(name) {
    if (views[name]) return views[name];
    var root = el('section', { 'data-cluster': name });
    root.appendChild(el('h2', {}, 'cluster ' + name));
    var grid = el('div', { class: 'grid' });
    root.appendChild(grid);
    var c1 = card(grid, 'requests per second, per endpoint');
    var rate = el('canvas', { id: 'rate-' + name, 'data-chart': 'rate' });
    c1.appendChild(rate);
    var c2 = card(grid, 'open upstream connections, per endpoint');
    var conns = el('canvas', { id: 'conns-' + name, 'data-chart': 'connections' });
    c2.appendChild(conns);
    var c3 = card(grid, 'imbalance over the sliding window');
    var imb = el('canvas', { id: 'imbalance-' + name, 'data-chart': 'imbalance' });
    c3.appendChild(imb);
    var c4 = card(grid, 'endpoints');
    var kpi = el('div', { class: 'kpi', 'data-kpi': 'jain' }, '–');
    c4.appendChild(kpi);
    var table = el('table');
    c4.appendChild(table);
    document.getElementById('clusters').appendChild(root);
    var imbChart = lineChart(imb, 'imbalance', 'index');
    imbChart.data.datasets = [
      { label: 'max/mean', data: [], borderColor: '#dc3912', backgroundColor: '#dc3912' },
      { label: "Jain's index", data: [], borderColor: '#109618', backgroundColor: '#109618' },
    ];
    views[name] = { rate: lineChart(rate, 'rate', 'req/s'), conns: lineChart(conns, 'connections', 'connections'), imb: imbChart, table: table, kpi: kpi };
    return views[name];
  }

  function series(chart, key, i) {
    for (var j = 0; j < chart.data.datasets.length; j++) if (chart.data.datasets[j].label === key) return chart.data.datasets[j];
    var color = COLORS[i % COLORS.length];
    var ds = { label: key, data: new Array(chart.data.labels.length).fill(null), borderColor: color, backgroundColor: color };
    chart.data.datasets.push(ds);
    return ds;
  }

  function ms(v) { return v === null || v === undefined ? '–' : v < 10 ? v.toFixed(2) : v.toFixed(1); }

  function push(chart, label) {
    chart.data.labels.push(label);
    if (chart.data.labels.length > HISTORY) {
      chart.data.labels.shift();
      chart.data.datasets.forEach(function (d) { d.data.shift(); });
    }
  }

  function render(stats) {
    var label = new Date(stats.timeMs).toLocaleTimeString();
    var dt = prev ? (stats.timeMs - prev.timeMs) / 1000 : 0;
    stats.clusters.forEach(function (c) {
      var v = view(c.name);
      push(v.rate, label); push(v.conns, label); push(v.imb, label);
      var before = {};
      if (prev) prev.clusters.forEach(function (pc) { if (pc.name === c.name) pc.endpoints.forEach(function (e) { before[e.key] = e.requests; }); });
      var rows = '<tr><th>endpoint</th><th>req/s</th><th>in flight</th><th>conns</th><th>errors</th>' +
        '<th title="measured over the sliding window">p50 ms</th><th title="measured over the sliding window">p99 ms</th>' +
        '<th title="the balancer EWMA: what picks use, not a measurement">balancer estimate ms</th><th>state</th></tr>';
      var ejectedNow = 0;
      c.endpoints.forEach(function (e, i) {
        var r = dt > 0 && before[e.key] !== undefined ? Math.max(0, (e.requests - before[e.key]) / dt) : 0;
        var rs = series(v.rate, e.key, i); rs.data.push(Math.round(r * 10) / 10);
        var cs = series(v.conns, e.key, i); cs.data.push(e.openConnections);
        var state = e.state === 'ejected' ? '<span class="bad">ejected</span>' : e.state + (e.terminating ? ' (terminating)' : '');
        if (e.state === 'ejected') ejectedNow++;
        rows += '<tr><td>' + e.key + '</td><td>' + r.toFixed(1) + '</td><td>' + e.inFlight + '</td><td>' + e.openConnections +
          '</td><td>' + e.errors + '</td><td data-p50="' + e.key + '">' + ms(e.p50Ms) + '</td><td data-p99="' + e.key + '">' + ms(e.p99Ms) +
          '</td><td data-estimate="' + e.key + '">' + e.latencyMs.toFixed(1) + '</td><td>' + state + '</td></tr>';
      });
      [v.rate, v.conns].forEach(function (ch) {
        ch.data.datasets.forEach(function (d) { while (d.data.length < ch.data.labels.length) d.data.unshift(null); });
      });
      var imbalance = c.window.imbalance;
      v.imb.data.datasets[0].data.push(imbalance.maxOverMean);
      v.imb.data.datasets[1].data.push(imbalance.jain);
      v.table.innerHTML = rows;
      v.kpi.textContent = "Jain's index " + imbalance.jain.toFixed(3) + ' · max/mean ' + imbalance.maxOverMean.toFixed(2) + ' · ejected now ' + ejectedNow;
      v.rate.update(); v.conns.update(); v.imb.update();
    });
    prev = stats;
    window.__evenlbUpdates++;
    document.getElementById('status').textContent = 'updated ' + label;
  }

  function poll() {
    fetch('/api/stats', { cache: 'no-store' })
      .then(function (r) { return r.json(); })
      .then(render)
      .catch(function (err) { document.getElementById('status').textContent = 'error: ' + err; })
      .finally(function () { setTimeout(poll, 1000); });
  }
  poll();
})();
</script>
</body>
</html>
`;
