/**
 * The admin listener under real load: `/healthz`, `/readyz`, `/config`, `/endpoints`,
 * `/metrics` (per-endpoint counters and the imbalance gauges, named as `proxyMetricNames`
 * says), and the live dashboard driven in Chromium (playwright-core): the page loads chart.js
 * from the admin server with no failed request or console error, its charts draw non-blank
 * canvases, the figures update, and the p50 it shows per endpoint agrees (within 3×) with the
 * p50 the load generator measured over the same window.
 */
import http from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { proxyMetricNames } from '../../src/metrics/proxy-metrics.js';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { launchChromium } from '../support/browser.js';
import { type Backend, fetchText, startBackend, startProxy, waitFor } from './helpers.js';

let backends: Backend[] = [];
let proxy: ProxyServer;
let adminPort = 0;
let running = true;
let loadDone: Promise<void> = Promise.resolve();
/** Generator-side latencies: when each request finished and how long it took, ms. */
const measured: { atMs: number; ms: number }[] = [];
const MAX_SAMPLES = 200_000;
const WINDOW_MS = 5000;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

beforeAll(async () => {
  backends = await Promise.all([1, 2, 3, 4].map((i) => startBackend(`d${i}`, `127.0.0.${90 + i}`, { delayMs: 3 })));
  proxy = await startProxy({
    admin: { address: '127.0.0.1:0' },
    imbalanceWindowMs: WINDOW_MS,
    listeners: [{ name: 'web', address: '127.0.0.1:0' }],
    clusters: [{ name: 'web', target: `static:///${backends.map((b) => b.key).join(',')}` }],
  });
  adminPort = proxy.adminPort as number;
  const port = proxy.listenerPort('web') as number;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const deadline = Date.now() + 40_000;
  const loop = async (): Promise<void> => {
    while (running && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const started = performance.now();
        const req = http.get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
          res.resume();
          res.on('end', () => {
            const now = performance.now();
            if (measured.length < MAX_SAMPLES) measured.push({ atMs: now, ms: now - started });
            setTimeout(resolve, 2); // pacing of the load loop (≤ 500 req/s per loop), not a wait
          });
        });
        req.on('error', () => resolve());
      });
    }
  };
  loadDone = Promise.all([loop(), loop(), loop(), loop()]).then(() => agent.destroy());
  await waitFor(() => backends.every((b) => b.hits > 20), 10_000, 'load');
});

afterAll(async () => {
  running = false;
  await loadDone;
  await proxy?.close();
  await Promise.all(backends.map((b) => b.close()));
});

describe('admin listener', () => {
  it('serves health, readiness, config and endpoints', async () => {
    expect((await fetchText(adminPort, '/healthz')).status).toBe(200);
    expect((await fetchText(adminPort, '/readyz')).status).toBe(200);
    const config = JSON.parse((await fetchText(adminPort, '/config')).body);
    expect(config.clusters[0].name).toBe('web');
    const endpoints = JSON.parse((await fetchText(adminPort, '/endpoints')).body);
    const eps = endpoints.clusters[0].endpoints as { key: string; requests: number; connections: number }[];
    expect(eps.map((e) => e.key).sort()).toEqual(backends.map((b) => b.key).sort());
    for (const e of eps) expect(e.requests).toBeGreaterThan(0);
  });

  it('exports per-endpoint metrics and imbalance gauges', async () => {
    const m = await fetchText(adminPort, '/metrics');
    expect(m.status).toBe(200);
    for (const b of backends) {
      expect(m.body).toMatch(
        new RegExp(
          `${proxyMetricNames.upstreamRequests}\\{cluster="web",endpoint="${b.key.replace(/\./g, '\\.')}"\\} [1-9]`,
        ),
      );
      expect(m.body).toContain(
        `${proxyMetricNames.upstreamDuration}_bucket{le="0.005",cluster="web",endpoint="${b.key}"}`,
      );
    }
    const jain = Number(
      new RegExp(`${proxyMetricNames.imbalanceJain}\\{cluster="web"\\} ([0-9.e-]+)`).exec(m.body)?.[1],
    );
    expect(jain).toBeGreaterThanOrEqual(0.9);
    expect(m.body).toContain(`${proxyMetricNames.imbalanceMaxOverMean}{cluster="web"}`);
    expect(m.body).toContain(`${proxyMetricNames.upstreamConnections}{cluster="web"`);
    expect(m.body).toContain('process_cpu_seconds_total');
  });

  it('serves only the named families with ?name= (repeatable), leaving unknown names out', async () => {
    const m = await fetchText(
      adminPort,
      `/metrics?name=${proxyMetricNames.imbalanceJain}&name=${proxyMetricNames.upstreamRequests}&name=no_such_metric`,
    );
    expect(m.status).toBe(200);
    const families = [...m.body.matchAll(/^# TYPE (\S+)/gm)].map((x) => x[1]);
    expect(families).toEqual([proxyMetricNames.imbalanceJain, proxyMetricNames.upstreamRequests]);
    expect(m.body).toMatch(new RegExp(`${proxyMetricNames.imbalanceJain}\\{cluster="web"\\} [0-9.e-]+\n`));
    expect(m.body).not.toContain('process_cpu_seconds_total');
  });
});

describe('dashboard', () => {
  let browser: Browser | undefined;

  afterAll(async () => {
    await browser?.close();
  });

  it('loads, draws non-blank charts and updates its figures', async (ctx) => {
    browser = await launchChromium(ctx);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`console: ${m.text()}`);
    });
    page.on('requestfailed', (r) => errors.push(`failed: ${r.url()}`));
    page.on('response', (r) => {
      if (r.status() >= 400) errors.push(`${r.status()}: ${r.url()}`);
    });
    await page.goto(`http://127.0.0.1:${adminPort}/`);
    // Page-side code is passed as strings: this project compiles without the DOM library.
    await page.waitForFunction('window.__evenlbUpdates >= 3', null, { timeout: 15_000 });
    const canvases = (await page.evaluate(`Array.from(document.querySelectorAll('canvas')).map((c) => {
      const ctx = c.getContext('2d');
      const { data } = ctx.getImageData(0, 0, c.width, c.height);
      let painted = 0;
      for (let i = 3; i < data.length; i += 4) if (data[i] > 0) painted++;
      return { id: c.id, painted };
    })`)) as { id: string; painted: number }[];
    expect(canvases.map((c) => c.id).sort()).toEqual(['conns-web', 'imbalance-web', 'rate-web']);
    for (const c of canvases) expect(c.painted).toBeGreaterThan(500);
    const read = async () =>
      (await page.evaluate(`({
        updates: window.__evenlbUpdates,
        kpi: document.querySelector('[data-kpi="jain"]')?.textContent ?? '',
        rows: document.querySelectorAll('section[data-cluster="web"] table tr').length,
        status: document.getElementById('status')?.textContent ?? '',
      })`)) as { updates: number; kpi: string; rows: number; status: string };
    const first = await read();
    await page.waitForFunction(`window.__evenlbUpdates >= ${first.updates + 2}`, null, { timeout: 10_000 });
    const second = await read();
    expect(second.updates).toBeGreaterThan(first.updates);
    expect(second.rows).toBe(5);
    const jain = Number(/Jain's index ([0-9.]+)/.exec(second.kpi)?.[1]);
    expect(jain).toBeGreaterThanOrEqual(0.9);
    expect(jain).toBeLessThanOrEqual(1);
    expect(second.status).not.toBe(first.status);
    expect(errors).toEqual([]);
    // Latency tells the truth: the p50 shown per endpoint is the measured one, within 3× of
    // what the load generator saw over the same window (the generator's includes the proxy
    // hop and its own event loop; the shown p50 is the upstream's, from the histogram).
    const shown = (await page.evaluate(
      `Array.from(document.querySelectorAll('[data-p50]')).map((td) => ({ key: td.getAttribute('data-p50'), text: td.textContent }))`,
    )) as { key: string; text: string }[];
    const now = performance.now();
    const generatorP50 = median(measured.filter((m) => m.atMs >= now - WINDOW_MS).map((m) => m.ms));
    expect(shown.map((s) => s.key).sort()).toEqual(backends.map((b) => b.key).sort());
    for (const s of shown) {
      const p50 = Number(s.text);
      expect(p50, `${s.key}: shown p50 ${s.text}, generator p50 ${generatorP50.toFixed(2)} ms`).toBeGreaterThan(
        generatorP50 / 3,
      );
      expect(p50, `${s.key}: shown p50 ${s.text}, generator p50 ${generatorP50.toFixed(2)} ms`).toBeLessThan(
        generatorP50 * 3,
      );
    }
    const headers = (await page.evaluate(
      `Array.from(document.querySelectorAll('section[data-cluster="web"] table th')).map((th) => th.textContent)`,
    )) as string[];
    expect(headers).toEqual(expect.arrayContaining(['p50 ms', 'p99 ms', 'balancer estimate ms']));
    // Headless Chromium asks for no icon, a desktop browser does: the page names an inline one
    // and /favicon.ico answers without an error either way.
    expect(await page.evaluate(`document.querySelector('link[rel="icon"]')?.getAttribute('href')`)).toBe('data:,');
    expect((await fetchText(adminPort, '/favicon.ico')).status).toBe(204);
    if (process.env.EVENLB_DASHBOARD_SCREENSHOT !== undefined) {
      await page.screenshot({ path: process.env.EVENLB_DASHBOARD_SCREENSHOT, fullPage: true });
    }
  });
});
