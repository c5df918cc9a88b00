/**
 * Reads each pod's load by scraping its metrics endpoint through the API server's pod proxy
 * (`/api/v1/namespaces/NS/pods/NAME:PORT/proxy/PATH`, RBAC `get pods/proxy`) — no Prometheus
 * needed, nothing reachable from outside the cluster but the API server. Three scrapes
 * `scrapeIntervalMs` apart make two rate windows: the earlier one tells whether the skew holds.
 * A pod that cannot be scraped (403, 503, not the text format) is an error naming the pod.
 */
import { request } from 'undici';
import type { Clock } from '../core/clock.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import type { KubeConnection } from '../discovery/kubernetes/kube-connection.js';
import { deadline } from './deadline.js';
import type { ObservedPod } from './kube-reader.js';
import {
  DEFAULT_CONNECTION_GAUGES,
  DEFAULT_REQUEST_COUNTERS,
  EVENLB_SERVER_METRIC_PREFIX,
  type LoadReading,
  type PodLoad,
} from './load-reading.js';
import { type PromSample, parsePromText, sumSamples } from './prom-text.js';

export interface ScrapeSettings {
  readonly namespace: string;
  readonly metricsPort: number | undefined;
  readonly metricsPath: string | undefined;
  readonly requestsMetric: string | undefined;
  readonly connectionsMetric: string | undefined;
  readonly scrapeIntervalMs: number;
  readonly timeoutMs: number;
}

const sleep = (clock: Clock, ms: number): Promise<void> => new Promise((r) => clock.setTimeout(r, ms));

function target(pod: ObservedPod, s: ScrapeSettings): { port: number; path: string } {
  const annotated = Number(pod.annotations['prometheus.io/port']);
  const port = s.metricsPort ?? (Number.isInteger(annotated) && annotated > 0 ? annotated : 9090);
  const path = s.metricsPath ?? pod.annotations['prometheus.io/path'] ?? '/metrics';
  return { port, path: path.startsWith('/') ? path : `/${path}` };
}

async function scrape(
  connection: KubeConnection,
  pod: ObservedPod,
  s: ScrapeSettings,
  clock: Clock,
): Promise<PromSample[]> {
  const { port, path } = target(pod, s);
  const where = `pod ${s.namespace}/${pod.name} port ${port} path ${path} (through the API server's pod proxy)`;
  const { server, headers, dispatcher } = await connection.prepare();
  const url = `${server}/api/v1/namespaces/${encodeURIComponent(s.namespace)}/pods/${encodeURIComponent(pod.name)}:${port}/proxy${path}`;
  let statusCode: number;
  let body: string;
  const { signal, dispose } = deadline(clock, s.timeoutMs);
  try {
    const res = await request(url, {
      method: 'GET',
      headers: { ...headers, accept: 'text/plain;version=0.0.4' },
      dispatcher,
      signal,
    });
    statusCode = res.statusCode;
    body = await res.body.text();
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err));
    const why = signal.aborted ? `no answer within ${s.timeoutMs} ms` : reason;
    throw new EvenlbError(ErrorCodes.DISCOVERY_FAILED, `cannot scrape ${where}: ${why}`, { cause: err });
  } finally {
    dispose();
  }
  if (statusCode !== 200) {
    let message = body.slice(0, 200);
    try {
      const parsed = JSON.parse(body) as { message?: unknown };
      if (typeof parsed.message === 'string') message = parsed.message;
    } catch {
      // Not a Status: keep the start of the body.
    }
    const hint = statusCode === 403 ? ' Grant get on pods/proxy (deploy/rbac/doctor.yaml) or use --prometheus' : '';
    throw new EvenlbError(
      ErrorCodes.DISCOVERY_FAILED,
      `cannot scrape ${where}: HTTP ${statusCode}: ${message}.${hint}`,
      {
        details: { pod: pod.name, statusCode },
      },
    );
  }
  try {
    return parsePromText(body);
  } catch (err) {
    throw new EvenlbError(
      ErrorCodes.DISCOVERY_FAILED,
      `${where} did not answer in the Prometheus text format: ${(err as Error).message}`,
      { cause: err },
    );
  }
}

/** Scrapes in flight at once: a large Service must not flood the API server. */
const SCRAPE_CONCURRENCY = 16;

/** `Promise.all(items.map(fn))` with at most `limit` calls running; results in order. */
async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

function firstPresent(samples: readonly PromSample[], names: readonly string[]): string | undefined {
  return names.find((n) => sumSamples(samples, n) !== undefined);
}

/** Scrapes every ready pod three times and turns counters into rates. */
export async function scrapePods(
  connection: KubeConnection,
  pods: readonly ObservedPod[],
  s: ScrapeSettings,
  clock: Clock,
): Promise<LoadReading> {
  const rounds: { atMs: number; samples: PromSample[][] }[] = [];
  for (let round = 0; round < 3; round++) {
    if (round > 0) await sleep(clock, s.scrapeIntervalMs);
    const atMs = clock.now();
    rounds.push({ atMs, samples: await mapLimited(pods, SCRAPE_CONCURRENCY, (p) => scrape(connection, p, s, clock)) });
  }
  const first = rounds[0]!.samples;
  const metric = s.requestsMetric ?? first.map((x) => firstPresent(x, DEFAULT_REQUEST_COUNTERS)).find((m) => m);
  if (metric === undefined || first.every((x) => sumSamples(x, metric) === undefined)) {
    throw new EvenlbError(
      ErrorCodes.INVALID_CONFIG,
      `no request counter found on the pods' metrics endpoints (looked for ${s.requestsMetric ?? DEFAULT_REQUEST_COUNTERS.join(', ')}); name one with --requests-metric`,
      { details: { field: 'requestsMetric' } },
    );
  }
  const gauge = s.connectionsMetric ?? first.map((x) => firstPresent(x, DEFAULT_CONNECTION_GAUGES)).find((m) => m);
  const rate = (i: number, a: number, b: number): number => {
    const va = sumSamples(rounds[a]!.samples[i]!, metric) ?? 0;
    const vb = sumSamples(rounds[b]!.samples[i]!, metric) ?? 0;
    const seconds = Math.max(1e-3, (rounds[b]!.atMs - rounds[a]!.atMs) / 1000);
    // A counter that went down restarted: its new value is what it counted since.
    return (vb >= va ? vb - va : vb) / seconds;
  };
  const current = new Map<string, PodLoad>();
  const earlier = new Map<string, number>();
  pods.forEach((p, i) => {
    const conns = gauge === undefined ? undefined : sumSamples(rounds[2]!.samples[i]!, gauge);
    current.set(p.name, { requestsPerSecond: rate(i, 1, 2), connections: conns });
    earlier.set(p.name, rate(i, 0, 1));
  });
  return {
    source: `3 scrapes ${s.scrapeIntervalMs} ms apart through the API server's pod proxy`,
    metric,
    connectionsMetric: gauge,
    pods: current,
    earlier,
    windowMs: s.scrapeIntervalMs,
    evenlbServer: first.some((samples) => samples.some((x) => x.name.startsWith(EVENLB_SERVER_METRIC_PREFIX))),
  };
}
