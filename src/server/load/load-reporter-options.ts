/**
 * Options of a `LoadReporter` (and of `reportLoad`, which adds where the load document is
 * served), declared once: how often the figures are recomputed, the averaging window of the
 * rates, the share of responses that carry a report, the application's own utilization, the
 * CPU the server may use, and the injected clock and CPU meter.
 */
import { isClock, systemClock } from '../../core/clock.js';
import { type Input, opt, type Parsed } from '../../core/options.js';
import { DEFAULT_LATENCY_MAX_AGE_MS } from './in-flight-latency.js';

const isFunction = (v: unknown): v is () => number => typeof v === 'function';

export const loadReporterSpec = {
  /** How often the reported figures are recomputed, ms (a response only copies the last ones); default 500. */
  periodMs: opt.number({ min: 10, max: 60_000, default: 500 }),
  /** Time constant of the rates and utilizations (exponential averaging), ms; default 1,000. */
  windowMs: opt.number({ min: 10, max: 600_000, default: 1_000 }),
  /** Share of responses that carry the report header, 0–1 (spread evenly, no randomness); default 1. */
  sampleRate: opt.number({ min: 0, max: 1, default: 1 }),
  /**
   * The application's own measure of how busy it is (a fraction, e.g. busy workers / workers),
   * read once per period into `application_utilization`; policies prefer it over CPU.
   */
  applicationUtilization: opt.custom<() => number, { optional: true }>('a function returning a number', isFunction, {
    optional: true,
  }),
  /** Report `cpu_utilization` (process CPU over the CPU available to it); default true. */
  cpu: opt.boolean({ default: true }),
  /**
   * CPUs the process may use (cores; fractions allowed); default the cgroup CPU limit when there
   * is one (a Kubernetes pod's `limits.cpu`), else the host's available parallelism.
   */
  cpuCores: opt.number({ min: 0, exclusiveMin: true, optional: true }),
  /** CPU time the process has used so far, µs (user + system); default `process.cpuUsage()`. For tests. */
  cpuUsageMicros: opt.custom<() => number, { optional: true }>('a function returning a number', isFunction, {
    optional: true,
  }),
  /** A request's latency history older than this is not read for the estimate, ms; default 30,000. */
  latencyMaxAgeMs: opt.number({ min: 1, default: DEFAULT_LATENCY_MAX_AGE_MS }),
  /** Time source; default the system clock (tests pass a `ManualClock`). */
  clock: opt.custom('a Clock (an object with now() and setTimeout())', isClock, { default: systemClock }),
};

/** What `new LoadReporter(...)` accepts, derived from `loadReporterSpec` (each field's TSDoc is on its spec entry). */
export interface LoadReporterOptions extends Readonly<Input<typeof loadReporterSpec>> {}

export type ParsedLoadReporterOptions = Parsed<typeof loadReporterSpec>;
