/**
 * Backend load reports in the ORCA format (`xds.data.orca.v3.OrcaLoadReport`), as servers attach
 * them to HTTP responses in the `endpoint-load-metrics` header — the form Envoy and vLLM speak.
 * The value starts with its format: `TEXT ` (comma-separated `key=value` pairs, e.g.
 * `TEXT cpu_utilization=0.3, rps_fractional=10, named_metrics.inflight=4`) or `JSON ` (the
 * report as a JSON object, with the proto's field names in either `snake_case` or `camelCase`).
 * The binary forms (`BIN `, `endpoint-load-metrics-bin`) are not read.
 *
 * Parsing is strict about what it keeps and lenient about what it skips: an unknown key is
 * ignored (a newer server may send more), a value that is not a finite non-negative number
 * drops that key, and a header in no known format yields `undefined`, never an exception — a
 * report is advice from a peer, and a malformed one must not fail the request carrying it.
 * At most `MAX_NAMED_METRICS` named metrics are kept, and the header is read only up to
 * `MAX_LOAD_REPORT_BYTES`, so a hostile server cannot make the client allocate without bound.
 */

/** The response header carrying a load report. */
export const LOAD_REPORT_HEADER = 'endpoint-load-metrics';

/**
 * The named metric evenlb servers use for their requests in flight (`named_metrics.inflight`),
 * read by the `prequal` policy as a probe answer would be.
 */
export const IN_FLIGHT_METRIC = 'inflight';

/**
 * The named metric for the server's latency estimate at its current load, ms
 * (`named_metrics.latency_ms`): what a probe answer gives beside in-flight, so a report carrying
 * both is a full answer for `prequal`. Best estimated from recent requests that arrived at about
 * the current in-flight count (Prequal's servers do so), so a busier server says it is slower.
 */
export const LATENCY_METRIC = 'latency_ms';

/** The longest header value read; a longer one is ignored whole. */
export const MAX_LOAD_REPORT_BYTES = 4096;

/** The most named metrics kept from one report. */
export const MAX_NAMED_METRICS = 32;

/** One load report: the ORCA fields evenlb reads. Utilizations are fractions (1 = 100%). */
export interface LoadReport {
  /** CPU in use as a fraction of the CPU available to the server; may exceed 1 past soft limits. */
  readonly cpuUtilization?: number;
  /** Memory in use, 0–1. */
  readonly memUtilization?: number;
  /** The application's own measure of how busy it is; preferred over CPU when set (and > 0). */
  readonly applicationUtilization?: number;
  /** Requests per second the server is answering. */
  readonly rpsFractional?: number;
  /** Errors per second the server is answering. */
  readonly eps?: number;
  /** Free-form figures (`named_metrics.<name>`), e.g. `inflight`. */
  readonly namedMetrics?: Readonly<Record<string, number>>;
}

const FIELDS: ReadonlyArray<readonly [keyof Omit<LoadReport, 'namedMetrics'>, string, string]> = [
  ['cpuUtilization', 'cpu_utilization', 'cpuUtilization'],
  ['memUtilization', 'mem_utilization', 'memUtilization'],
  ['applicationUtilization', 'application_utilization', 'applicationUtilization'],
  ['rpsFractional', 'rps_fractional', 'rpsFractional'],
  ['eps', 'eps', 'eps'],
];

const NAMED_PREFIX = 'named_metrics.';
/** A metric name as ORCA producers write them (no separators of the TEXT form). */
const METRIC_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;

type Mutable = { -readonly [K in keyof LoadReport]: LoadReport[K] };

function numberOf(value: unknown): number | undefined {
  const n = typeof value === 'string' ? (value.trim() === '' ? Number.NaN : Number(value)) : value;
  return typeof n === 'number' && Number.isFinite(n) && n >= 0 ? n : undefined;
}

function setNamed(out: Mutable, name: string, value: unknown): void {
  const n = numberOf(value);
  if (n === undefined || !METRIC_NAME.test(name)) return;
  const named = (out.namedMetrics ?? {}) as Record<string, number>;
  if (!(name in named) && Object.keys(named).length >= MAX_NAMED_METRICS) return;
  named[name] = n;
  out.namedMetrics = named;
}

function finish(out: Mutable): LoadReport | undefined {
  if (Object.keys(out).length === 0) return undefined;
  if (out.namedMetrics !== undefined) Object.freeze(out.namedMetrics);
  return Object.freeze(out);
}

function parseText(body: string): LoadReport | undefined {
  const out: Mutable = {};
  for (const pair of body.split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) continue;
    const key = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1);
    if (key.startsWith(NAMED_PREFIX)) {
      setNamed(out, key.slice(NAMED_PREFIX.length), value);
      continue;
    }
    const field = FIELDS.find((f) => f[1] === key);
    const n = numberOf(value);
    if (field !== undefined && n !== undefined) out[field[0]] = n;
  }
  return finish(out);
}

function parseJson(body: string): LoadReport | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
  const obj = parsed as Record<string, unknown>;
  const out: Mutable = {};
  for (const [field, snake, camel] of FIELDS) {
    const n = numberOf(obj[snake] ?? obj[camel]);
    if (n !== undefined) out[field] = n;
  }
  const named = obj.named_metrics ?? obj.namedMetrics;
  if (named !== null && typeof named === 'object' && !Array.isArray(named)) {
    for (const [name, value] of Object.entries(named as Record<string, unknown>)) setNamed(out, name, value);
  }
  return finish(out);
}

/**
 * Reads an `endpoint-load-metrics` header value; `undefined` when it is in no format read here
 * or carries nothing usable.
 *
 * @example
 * parseLoadReport('TEXT cpu_utilization=0.3, named_metrics.inflight=4');
 * // → { cpuUtilization: 0.3, namedMetrics: { inflight: 4 } }
 */
export function parseLoadReport(value: string | undefined): LoadReport | undefined {
  if (value === undefined || value.length > MAX_LOAD_REPORT_BYTES) return undefined;
  const v = value.trimStart();
  if (v.startsWith('TEXT ')) return parseText(v.slice(5));
  if (v.startsWith('JSON ')) return parseJson(v.slice(5));
  return undefined;
}

/** A number in the TEXT form: up to 6 significant decimals, no exponent for ordinary values. */
function formatNumber(n: number): string {
  return Number.isInteger(n) ? String(n) : String(Number(n.toPrecision(6)));
}

/**
 * The TEXT form of `report` for the `endpoint-load-metrics` header. Fields that are absent or not
 * finite non-negative numbers are left out.
 *
 * @example
 * formatLoadReport({ applicationUtilization: 0.5, rpsFractional: 120, namedMetrics: { inflight: 3 } });
 * // → 'TEXT application_utilization=0.5, rps_fractional=120, named_metrics.inflight=3'
 */
export function formatLoadReport(report: LoadReport): string {
  const parts: string[] = [];
  for (const [field, snake] of FIELDS) {
    const n = numberOf(report[field]);
    if (n !== undefined) parts.push(`${snake}=${formatNumber(n)}`);
  }
  for (const [name, value] of Object.entries(report.namedMetrics ?? {})) {
    const n = numberOf(value);
    if (n !== undefined && METRIC_NAME.test(name)) parts.push(`${NAMED_PREFIX}${name}=${formatNumber(n)}`);
  }
  return `TEXT ${parts.join(', ')}`;
}

/**
 * The utilization a weighting policy reads from a report: `application_utilization` when set and
 * positive, else `cpu_utilization` (gRFC A58's rule); `undefined` when neither is there.
 */
export function reportedUtilization(report: LoadReport): number | undefined {
  const app = report.applicationUtilization;
  if (app !== undefined && app > 0) return app;
  return report.cpuUtilization;
}
