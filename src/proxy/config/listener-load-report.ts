/**
 * `listeners[].loadReport`: an L7 listener reports the load of what it fronts — the ORCA
 * `endpoint-load-metrics` header on responses and the load document's `inFlight`/`latencyMs`
 * for load probes — so a sidecar reports for an app that has no evenlb code. Its fields are the
 * `LoadReporter`'s own spec entries a file can hold (`loadReporterSpec`: the period, window,
 * sample rate, CPU reporting and latency history; never restated here) plus what only a listener
 * needs: `maxInFlight` (requests in flight over it become `application_utilization`) and where
 * probes are answered. With `recycle.fairShare` set, probes are answered on its load port (one
 * load document carries the peer report and the probe figures) and `loadPort` may only repeat
 * that port; without it `loadPort` is required — the document is plain HTTP/1.1 on a port of its
 * own, so the data path stays free of a path check per request.
 */
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import { type Input, opt, type Parsed, parseOptions, specSchema } from '../../core/options.js';
import { loadReporterSpec } from '../../server/load/load-reporter-options.js';
import { configError } from './config-error.js';

const { periodMs, windowMs, sampleRate, cpu, cpuCores, latencyMaxAgeMs } = loadReporterSpec;

export const listenerLoadReportSpec = {
  periodMs,
  windowMs,
  sampleRate,
  cpu,
  cpuCores,
  latencyMaxAgeMs,
  /**
   * Requests in flight the app is sized for: `application_utilization` = the period's mean
   * requests in flight (completions a second × latency estimate, or those in flight now if
   * more) / this; policies prefer it over CPU. Unset: not reported.
   */
  maxInFlight: opt.int({ min: 1, optional: true }),
  /**
   * Port of the load document for probes (plain HTTP/1.1); required unless `recycle.fairShare`
   * is set (then its `loadPort` serves both, and this may only repeat it).
   */
  loadPort: opt.int({ min: 1, max: 65535, optional: true }),
  /** Address `loadPort` binds; default all interfaces. */
  loadHost: opt.string({ nonEmpty: true, optional: true }),
};

/** `listeners[].loadReport` as a file says it, derived from `listenerLoadReportSpec`. */
export interface ListenerLoadReport extends Readonly<Input<typeof listenerLoadReportSpec>> {}

export type ParsedListenerLoadReport = Parsed<typeof listenerLoadReportSpec>;

/** The JSON schema of `loadReport` (each field's from its spec entry; unknown keys rejected). */
export const listenerLoadReportSchema = specSchema(listenerLoadReportSpec);

/**
 * Validates `value` (at `field`, e.g. `listeners[0].loadReport`) for a listener of `protocol`
 * whose fair-share load port is `fairSharePort` (undefined without `recycle.fairShare`);
 * returns the parsed options. Errors name the field.
 *
 * @example
 * checkListenerLoadReport('listeners[0].loadReport', { loadPort: 9904 }, 'http', undefined).sampleRate; // 1
 */
export function checkListenerLoadReport(
  field: string,
  value: ListenerLoadReport,
  protocol: string,
  fairSharePort: number | undefined,
): ParsedListenerLoadReport {
  if (protocol === 'tcp') throw configError(field, 'is only valid for protocol "http" or "https"');
  let parsed: ParsedListenerLoadReport;
  try {
    parsed = parseOptions(field, value, listenerLoadReportSpec);
  } catch (err) {
    if (!(err instanceof EvenlbError)) throw err;
    const inner = (err.details as { field?: unknown } | undefined)?.field;
    throw new EvenlbError(ErrorCodes.INVALID_CONFIG, `proxy config: ${err.message}`, {
      details: { field: typeof inner === 'string' ? `${field}.${inner}` : field },
    });
  }
  if (fairSharePort === undefined && parsed.loadPort === undefined)
    throw configError(
      `${field}.loadPort`,
      'is required without recycle.fairShare: load probes are answered on a port of its own (plain HTTP)',
    );
  if (fairSharePort !== undefined && parsed.loadPort !== undefined && parsed.loadPort !== fairSharePort)
    throw configError(
      `${field}.loadPort`,
      `must be left out or equal recycle.fairShare.loadPort (${fairSharePort}): one load document carries both`,
      parsed.loadPort,
    );
  if (fairSharePort !== undefined && parsed.loadHost !== undefined)
    throw configError(
      `${field}.loadHost`,
      'must be left out with recycle.fairShare (probes are answered where recycle.fairShare.loadHost says)',
      parsed.loadHost,
    );
  return parsed;
}
