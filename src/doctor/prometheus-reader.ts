/**
 * Reads each pod's load from Prometheus' HTTP API (`POST /api/v1/query`, form-encoded): requests per second
 * by pod now and `lookbackMs` earlier (two instant queries at different `time`s), and open
 * connections by pod. The request query is the user's (`--query`) or, by default, `rate()` of
 * the first known request counter that returns the Service's pods. Placeholders in queries:
 * `{{namespace}}`, `{{pods}}` (an anchored regex of the pod names), `{{window}}` (e.g. `5m`),
 * `{{podLabel}}` and `{{metric}}`. An unreachable Prometheus or an `error` answer is an error
 * naming the URL and the query.
 */
import { request } from 'undici';
import type { Clock } from '../core/clock.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { deadline } from './deadline.js';
import {
  DEFAULT_CONNECTION_GAUGES,
  DEFAULT_REQUEST_COUNTERS,
  EVENLB_SERVER_METRIC_PREFIX,
  type LoadReading,
  type PodLoad,
} from './load-reading.js';

export interface PrometheusSettings {
  readonly url: string;
  readonly namespace: string;
  readonly podLabel: string;
  readonly query: string | undefined;
  readonly connectionsQuery: string | undefined;
  readonly requestsMetric: string | undefined;
  readonly connectionsMetric: string | undefined;
  readonly windowMs: number;
  readonly lookbackMs: number;
  readonly timeoutMs: number;
  readonly clock: Clock;
}

const RATE_TEMPLATE =
  'sum by ({{podLabel}}) (rate({{metric}}{namespace="{{namespace}}",{{podLabel}}=~"{{pods}}"}[{{window}}]))';
const GAUGE_TEMPLATE = 'sum by ({{podLabel}}) ({{metric}}{namespace="{{namespace}}",{{podLabel}}=~"{{pods}}"})';
/** Which pods expose any of evenlb's server-side metrics (the recycler's or the sidecar's). */
const EVENLB_SERVER_TEMPLATE = `count by ({{podLabel}}) ({__name__=~"${EVENLB_SERVER_METRIC_PREFIX}.+",namespace="{{namespace}}",{{podLabel}}=~"{{pods}}"})`;

const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\\\$&');

function fill(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (all, key: string) => values[key] ?? all);
}

/** Runs one instant query; returns value by pod label. */
async function instant(s: PrometheusSettings, query: string, timeSeconds: number): Promise<Map<string, number>> {
  const url = new URL('api/v1/query', s.url.endsWith('/') ? s.url : `${s.url}/`);
  // POSTed as a form: a regex of a thousand pod names would not fit in a URL.
  const form = new URLSearchParams({ query, time: timeSeconds.toFixed(3) }).toString();
  let statusCode: number;
  let body: unknown;
  const { signal, dispose } = deadline(s.clock, s.timeoutMs);
  try {
    const res = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
      signal,
    });
    statusCode = res.statusCode;
    const text = await res.body.text();
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err));
    const reason = signal.aborted ? `no answer within ${s.timeoutMs} ms` : code;
    throw new EvenlbError(ErrorCodes.CONNECT_FAILED, `cannot reach Prometheus at ${s.url}: ${reason}`, {
      cause: err,
      details: { prometheus: s.url },
    });
  } finally {
    dispose();
  }
  const answer = (typeof body === 'object' && body !== null ? body : {}) as {
    status?: unknown;
    error?: unknown;
    errorType?: unknown;
    data?: { resultType?: unknown; result?: unknown };
  };
  if (answer.status === 'error' && answer.errorType === 'bad_data') {
    // Prometheus could not parse or run the query: the user's input.
    throw new EvenlbError(
      ErrorCodes.INVALID_OPTION,
      `Prometheus at ${s.url} rejected the query ${query}: ${String(answer.error)}`,
      {
        details: { field: 'query', prometheus: s.url, query },
      },
    );
  }
  if (answer.status !== 'success') {
    const why = typeof answer.error === 'string' ? answer.error : `HTTP ${statusCode}, not a Prometheus API answer`;
    throw new EvenlbError(ErrorCodes.CONNECT_FAILED, `Prometheus at ${s.url} refused the query ${query}: ${why}`, {
      details: { prometheus: s.url, query },
    });
  }
  const out = new Map<string, number>();
  if (answer.data?.resultType !== 'vector' || !Array.isArray(answer.data.result)) return out;
  for (const item of answer.data.result as { metric?: Record<string, unknown>; value?: unknown }[]) {
    const pod = item.metric?.[s.podLabel];
    const v = Array.isArray(item.value) ? Number(item.value[1]) : Number.NaN;
    if (typeof pod === 'string' && Number.isFinite(v)) out.set(pod, (out.get(pod) ?? 0) + v);
  }
  return out;
}

function promDuration(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 1000)}s`;
}

/** Reads load for `pods` from Prometheus; `nowMs` is wall-clock epoch ms. */
export async function readPrometheus(
  s: PrometheusSettings,
  pods: readonly string[],
  nowMs: number,
): Promise<LoadReading> {
  const values = {
    namespace: s.namespace,
    pods: `^(${pods.map(escapeRegex).join('|')})$`,
    window: promDuration(s.windowMs),
    podLabel: s.podLabel,
  };
  const now = nowMs / 1000;
  const earlierAt = (nowMs - s.lookbackMs) / 1000;
  const has = (m: Map<string, number>) => pods.some((p) => m.has(p));
  let metric: string | undefined;
  let query: string | undefined;
  let current = new Map<string, number>();
  const candidates =
    s.query !== undefined
      ? [undefined]
      : s.requestsMetric !== undefined
        ? [s.requestsMetric]
        : DEFAULT_REQUEST_COUNTERS;
  for (const m of candidates) {
    const q = fill(s.query ?? RATE_TEMPLATE, { ...values, metric: m ?? '' });
    const result = await instant(s, q, now);
    if (has(result)) {
      metric = m ?? 'query';
      query = q;
      current = result;
      break;
    }
  }
  if (query === undefined || metric === undefined) {
    throw new EvenlbError(
      ErrorCodes.INVALID_CONFIG,
      `Prometheus at ${s.url} has no request rate for the pods of ${s.namespace} (tried ${s.query ?? candidates.join(', ')}); give --query or --requests-metric`,
      { details: { field: 'query' } },
    );
  }
  const earlier = await instant(s, query, earlierAt);
  let connections = new Map<string, number>();
  let connectionsMetric: string | undefined;
  const gauges =
    s.connectionsQuery !== undefined
      ? [undefined]
      : s.connectionsMetric !== undefined
        ? [s.connectionsMetric]
        : DEFAULT_CONNECTION_GAUGES;
  for (const g of gauges) {
    const result = await instant(s, fill(s.connectionsQuery ?? GAUGE_TEMPLATE, { ...values, metric: g ?? '' }), now);
    if (has(result)) {
      connections = result;
      connectionsMetric = g ?? 'connections query';
      break;
    }
  }
  const evenlbServer = has(await instant(s, fill(EVENLB_SERVER_TEMPLATE, values), now));
  const out = new Map<string, PodLoad>();
  for (const p of pods) out.set(p, { requestsPerSecond: current.get(p) ?? 0, connections: connections.get(p) });
  return {
    source: `Prometheus ${s.url}: ${query}`,
    metric,
    connectionsMetric,
    pods: out,
    earlier: has(earlier) ? new Map(pods.map((p) => [p, earlier.get(p) ?? 0])) : undefined,
    windowMs: s.windowMs,
    evenlbServer,
  };
}
