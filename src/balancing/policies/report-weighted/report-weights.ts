/**
 * Endpoint weights from backend load reports, by gRFC A58 (gRPC's and Envoy's client-side
 * weighted round robin): an endpoint's weight is `qps / (utilization + eps / qps × penalty)` —
 * the requests it answers per unit of busy capacity, less for errors it answers cheaply — from
 * its latest report (`EndpointLoad.report`: `rps_fractional`, `eps`, `application_utilization`
 * or else `cpu_utilization`). A weight is usable only when qps and utilization are positive,
 * the report is younger than `weightExpirationPeriodMs`, and the endpoint's reports have been
 * usable for `blackoutPeriodMs` (so one lucky early report cannot flood a new pod). Endpoints
 * without a usable weight get the mean of the usable ones; with none usable, all weigh the
 * same (plain weighted round robin by the endpoints' own weights) — except at a start, when
 * every weight is still in its blackout: there are no established weights to guard, so the
 * reports count at once.
 *
 * Kept per balancer: when each endpoint's reports became usable (A58's `non_empty_since`),
 * reset when they expire. The result is relative (mean 1) and bounded to
 * [1 / maxWeightRatio, maxWeightRatio] around the mean, so one endpoint reporting a tiny
 * utilization cannot take nearly all traffic.
 */
import type { Endpoint } from '../../../core/endpoint.js';
import type { LoadTracker } from '../../endpoint-load.js';
import type { ReportedWeights } from '../../policy.js';

export interface ReportWeightOptions {
  readonly blackoutPeriodMs: number;
  readonly weightExpirationPeriodMs: number;
  readonly weightUpdatePeriodMs: number;
  readonly errorUtilizationPenalty: number;
  readonly maxWeightRatio: number;
}

/**
 * A58's weight of one report: `qps / (utilization + eps / qps × penalty)`; 0 (unusable) unless
 * qps and utilization are positive.
 *
 * @example
 * reportWeight(100, 0.5, 0, 1)  // → 200
 * reportWeight(100, 0.5, 50, 1) // → 100 (half the answers are errors)
 */
export function reportWeight(qps: number, utilization: number, eps: number, penalty: number): number {
  if (!(qps > 0) || !(utilization > 0)) return 0;
  const errors = eps > 0 ? (eps / qps) * penalty : 0;
  return qps / (utilization + errors);
}

export class ReportWeights implements ReportedWeights {
  readonly updatePeriodMs: number;
  readonly #o: ReportWeightOptions;
  /** Clock ms since when each endpoint's reports have been usable. */
  readonly #usableSince = new Map<string, number>();

  constructor(options: ReportWeightOptions) {
    this.#o = options;
    this.updatePeriodMs = options.weightUpdatePeriodMs;
  }

  multipliers(endpoints: readonly Endpoint[], loads: LoadTracker, nowMs: number, out: Float64Array): void {
    const o = this.#o;
    let total = 0;
    let usable = 0;
    let blackedOut = 0;
    for (let i = 0; i < endpoints.length; i++) {
      const w = this.#weight((endpoints[i] as Endpoint).key, loads, nowMs);
      out[i] = w;
      if (w > 0) {
        total += w;
        usable++;
      } else if (w < 0) blackedOut++;
    }
    if (usable === 0 && blackedOut > 0) {
      // Every weight is new (a start): the blackout guards newcomers against established
      // weights, and there are none — take the reports rather than equal weights.
      for (let i = 0; i < out.length; i++) {
        const w = out[i] as number;
        out[i] = w < 0 ? -w : 0;
        if (w < 0) total -= w;
      }
      usable = blackedOut;
    }
    for (let i = 0; i < out.length; i++) if ((out[i] as number) < 0) out[i] = 0;
    if (this.#usableSince.size > endpoints.length) this.#forgetGone(endpoints);
    if (usable === 0) {
      out.fill(1);
      return;
    }
    const mean = total / usable;
    for (let i = 0; i < out.length; i++) {
      const w = out[i] as number;
      const relative = w > 0 ? w / mean : 1;
      out[i] = Math.min(o.maxWeightRatio, Math.max(1 / o.maxWeightRatio, relative));
    }
  }

  /** The usable weight of `key` now; its weight negated while in blackout; 0 when it has none. */
  #weight(key: string, loads: LoadTracker, nowMs: number): number {
    const o = this.#o;
    const load = loads.peek(key);
    const at = load === undefined ? Number.NaN : load.reported('reportedAtMs');
    if (load === undefined || !(nowMs - at < o.weightExpirationPeriodMs)) {
      this.#usableSince.delete(key);
      return 0;
    }
    const w = reportWeight(
      load.reported('rps'),
      load.reported('utilization'),
      load.reported('eps'),
      o.errorUtilizationPenalty,
    );
    if (!(w > 0)) return 0;
    let since = this.#usableSince.get(key);
    if (since === undefined) {
      // First seen usable now: its latest report is the earliest time we know it was.
      since = at;
      this.#usableSince.set(key, since);
    }
    return nowMs - since < o.blackoutPeriodMs ? -w : w;
  }

  #forgetGone(endpoints: readonly Endpoint[]): void {
    const keys = new Set(endpoints.map((e) => e.key));
    for (const key of this.#usableSince.keys()) if (!keys.has(key)) this.#usableSince.delete(key);
  }
}
