/**
 * The admin listener (loopback unless configured otherwise): `/metrics` (Prometheus text;
 * `?name=FAMILY`, repeatable, for only those families),
 * `/endpoints` (each cluster's stats: `ProxyClusterStats`, the clusters' one stats model plus the
 * proxy's latency quantiles), `/config` (the running configuration, with
 * secrets redacted), `/healthz`, `/readyz`, `/api/stats` (what the dashboard polls: endpoint
 * counters, latency quantiles, imbalance, proxy CPU time) and `/`, the live dashboard, with
 * chart.js served from the installed package.
 *
 * A `metrics` scope server (`admin.metricsAddress`) serves only `/metrics`, `/healthz` and
 * `/readyz`: it is the one to bind on a pod IP, so Prometheus and the kubelet reach it while
 * the configuration and the endpoint list stay on loopback.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { epochMs } from '../../core/clock.js';
import type { ProxyMetrics } from '../../metrics/proxy-metrics.js';
import type { ProxyConfig } from '../config/config-schema.js';
import { boundPort, listenAt } from '../listener/listener-sockets.js';
import { dashboardHtml } from './dashboard-page.js';

export interface AdminDeps {
  readonly metrics: ProxyMetrics;
  readonly config: () => ProxyConfig;
  /** Undefined when ready; else why not. */
  readonly notReady: () => string | undefined;
  /** `full` (default) serves everything; `metrics` only `/metrics`, `/healthz` and `/readyz`. */
  readonly scope?: 'full' | 'metrics';
}

/** Paths a `metrics` scope server answers. */
const METRICS_PATHS = new Set(['/metrics', '/healthz', '/readyz']);

/** Field names whose values `/config` never shows (keys, tokens, passwords, other secrets). */
const SECRET_FIELD = /key|token|password|secret|credential/i;

/**
 * A copy of `value` with every field whose name looks like a secret replaced by
 * `"[redacted]"`, at any depth.
 */
export function redactSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactSecrets);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_FIELD.test(k) ? '[redacted]' : redactSecrets(v);
  return out;
}

let chartJs: Buffer | undefined;
function chartJsSource(): Buffer {
  if (chartJs === undefined) {
    const require = createRequire(import.meta.url);
    // The package's exports map hides dist/ files: resolve the entry, then its sibling.
    chartJs = readFileSync(join(dirname(require.resolve('chart.js')), 'chart.umd.min.js'));
  }
  return chartJs;
}

function json(res: http.ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value, null, 2);
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(body);
}

/**
 * The registry as Prometheus text; with `?name=` (repeatable) only the named families, each
 * collected alone — a poller that wants one gauge every few hundred ms (the demo's pods) skips
 * the process and runtime collectors. An unknown name is left out.
 */
async function metricsText(metrics: ProxyMetrics, url: string): Promise<string> {
  const names = new URL(url, 'http://admin').searchParams.getAll('name');
  if (names.length === 0) return metrics.registry.metrics();
  const known = names.filter((n) => metrics.registry.getSingleMetric(n) !== undefined);
  const texts = await Promise.all(known.map((n) => metrics.registry.getSingleMetricAsString(n)));
  return texts.map((t) => `${t}\n`).join('');
}

export class AdminServer {
  readonly #server: http.Server;
  readonly #deps: AdminDeps;
  #closing: Promise<void> | undefined;

  constructor(deps: AdminDeps) {
    this.#deps = deps;
    this.#server = http.createServer((req, res) => {
      this.#handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) json(res, 500, { error: String(err) });
        else res.destroy();
      });
    });
    this.#server.keepAliveTimeout = 5000;
    // After listen(), an 'error' is a failed accept: the prober retries, the process must not die.
    this.#server.on('error', () => {});
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    const d = this.#deps;
    if (d.scope === 'metrics' && !METRICS_PATHS.has(path ?? '')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    switch (path) {
      case '/metrics': {
        const text = await metricsText(d.metrics, req.url ?? '/');
        res.writeHead(200, { 'content-type': d.metrics.registry.contentType });
        res.end(text);
        return;
      }
      case '/endpoints':
        return json(res, 200, { clusters: d.metrics.stats() });
      case '/config':
        return json(res, 200, redactSecrets(d.config()));
      case '/healthz':
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
        return;
      case '/readyz': {
        const why = d.notReady();
        res.writeHead(why === undefined ? 200 : 503, { 'content-type': 'text/plain' });
        res.end(why === undefined ? 'ready\n' : `not ready: ${why}\n`);
        return;
      }
      case '/api/stats': {
        const cpu = process.cpuUsage();
        return json(res, 200, {
          timeMs: epochMs(),
          cpuMicros: cpu.user + cpu.system,
          pid: process.pid,
          clusters: d.metrics.stats(),
        });
      }
      case '/assets/chart.umd.js':
        res.writeHead(200, { 'content-type': 'text/javascript', 'cache-control': 'max-age=3600' });
        res.end(chartJsSource());
        return;
      case '/favicon.ico':
        // Browsers that ignore the page's inline icon ask anyway: answer without an error.
        res.writeHead(204, { 'cache-control': 'max-age=86400' }).end();
        return;
      case '/':
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(dashboardHtml);
        return;
      default:
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  }

  listen(address: string): Promise<number> {
    return listenAt(this.#server, address);
  }

  get port(): number {
    return boundPort(this.#server);
  }

  /**
   * Stops the admin server. Its requests are short reads of in-memory state, so open
   * connections (scrapers' keep-alive sockets, a dashboard's poll) are closed at once: close
   * and destroy are the same here. Always settles; idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= new Promise((resolve) => {
      if (!this.#server.listening) {
        resolve();
        return;
      }
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
    return this.#closing;
  }

  /** Same as `close()` (see there). */
  destroy(): Promise<void> {
    return this.close();
  }
}
