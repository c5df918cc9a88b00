/**
 * Passive outlier detection (Envoy's "consecutive failures" detector). Callers report the end of
 * every request to an endpoint as a success or a failure (a connect failure, a transport error
 * or a 5xx); `consecutiveFailures` failures in a row eject the endpoint for
 * `baseEjectionMs × times ejected` (capped at `maxEjectionMs`), after which it returns on its
 * own. Never more than `maxEjectionPercent` of the known eligible endpoints are ejected at
 * once, so a Service-wide outage degrades to "try everyone" rather than "nobody". Ejections
 * are published as a key set (`Balancer.setEjected`) through the `onChange` callback; the
 * client and the proxy share this class.
 *
 * @example
 * const detector = new OutlierDetector({ consecutiveFailures: 3 }, {
 *   onChange: (ejected) => balancer.setEjected(ejected),
 * });
 * detector.setEndpoints(balancer.endpointSet);
 * detector.record('10.0.0.1:8443', false);
 */
import { type Clock, systemClock, type TimerHandle } from '../core/clock.js';
import type { EndpointSet } from '../core/endpoint-set.js';
import { opt, type Parsed, parseOptions } from '../core/options.js';

export const outlierDetectionSpec = {
  /** Failures in a row that eject an endpoint; default 5. */
  consecutiveFailures: opt.int({ min: 1, default: 5 }),
  /** First ejection length in ms; the n-th ejection lasts n × this (capped); default 30 s. */
  baseEjectionMs: opt.number({ min: 0, exclusiveMin: true, default: 30_000 }),
  /** Longest ejection in ms; default 300 s. */
  maxEjectionMs: opt.number({ min: 0, exclusiveMin: true, default: 300_000 }),
  /** At most this percentage of eligible endpoints is ejected at once (rounded down); default 50. */
  maxEjectionPercent: opt.number({ min: 0, max: 100, default: 50 }),
};

export type OutlierDetectionOptions = Parsed<typeof outlierDetectionSpec>;

/** Per-endpoint detector state, for stats. */
export interface OutlierState {
  readonly consecutiveFailures: number;
  readonly timesEjected: number;
  /** Clock ms when the current ejection ends; undefined when not ejected. */
  readonly ejectedUntilMs: number | undefined;
}

export interface OutlierDetectorHooks {
  readonly clock?: Clock;
  /** Called with the full ejected key set every time it changes. */
  readonly onChange?: (ejected: ReadonlySet<string>) => void;
  /** Called once per ejection (for metrics and logs). */
  readonly onEject?: (key: string, durationMs: number) => void;
}

interface Entry {
  consecutiveFailures: number;
  timesEjected: number;
  ejectedUntilMs: number | undefined;
  /** When the last ejection ended; a long healthy spell after it resets `timesEjected`. */
  returnedAtMs: number | undefined;
  timer: TimerHandle | undefined;
}

export class OutlierDetector {
  readonly options: OutlierDetectionOptions;
  readonly #clock: Clock;
  readonly #onChange: ((ejected: ReadonlySet<string>) => void) | undefined;
  readonly #onEject: ((key: string, durationMs: number) => void) | undefined;
  readonly #entries = new Map<string, Entry>();
  #ejected: ReadonlySet<string> = new Set();
  #eligibleCount = 0;
  #closed = false;

  /** `input` is validated once (unknown keys rejected). */
  constructor(input: unknown, hooks: OutlierDetectorHooks = {}) {
    this.options = parseOptions('outlier detection', input, outlierDetectionSpec);
    this.#clock = hooks.clock ?? systemClock;
    this.#onChange = hooks.onChange;
    this.#onEject = hooks.onEject;
  }

  /** The currently ejected endpoint keys. */
  get ejected(): ReadonlySet<string> {
    return this.#ejected;
  }

  /** Follows a new endpoint snapshot: forgets removed endpoints (un-ejecting them). */
  setEndpoints(set: EndpointSet): void {
    this.#eligibleCount = set.eligible().length;
    let changed = false;
    for (const [key, entry] of this.#entries) {
      if (set.has(key)) continue;
      entry.timer?.cancel();
      this.#entries.delete(key);
      if (this.#ejected.has(key)) changed = true;
    }
    if (changed) this.#publish();
  }

  /**
   * Records the end of one request to `key`: `ok` false for a connect failure, a transport
   * error or a 5xx. Returns true when this failure ejected the endpoint.
   */
  record(key: string, ok: boolean): boolean {
    if (this.#closed) return false;
    let entry = this.#entries.get(key);
    if (ok) {
      if (entry !== undefined) entry.consecutiveFailures = 0;
      return false;
    }
    if (entry === undefined) {
      entry = {
        consecutiveFailures: 0,
        timesEjected: 0,
        ejectedUntilMs: undefined,
        returnedAtMs: undefined,
        timer: undefined,
      };
      this.#entries.set(key, entry);
    }
    entry.consecutiveFailures++;
    if (entry.ejectedUntilMs !== undefined || entry.consecutiveFailures < this.options.consecutiveFailures)
      return false;
    if (!this.#mayEjectAnother()) return false;
    this.#eject(key, entry);
    return true;
  }

  /** Detector state for `key` (a fresh state when never seen). */
  state(key: string): OutlierState {
    const e = this.#entries.get(key);
    if (e === undefined) return { consecutiveFailures: 0, timesEjected: 0, ejectedUntilMs: undefined };
    return {
      consecutiveFailures: e.consecutiveFailures,
      timesEjected: e.timesEjected,
      ejectedUntilMs: e.ejectedUntilMs,
    };
  }

  /** Cancels timers; idempotent. Ejections stop changing. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const e of this.#entries.values()) e.timer?.cancel();
  }

  #mayEjectAnother(): boolean {
    const allowed = Math.floor((this.#eligibleCount * this.options.maxEjectionPercent) / 100);
    return this.#ejected.size + 1 <= allowed;
  }

  #eject(key: string, entry: Entry): void {
    const { baseEjectionMs, maxEjectionMs } = this.options;
    const now = this.#clock.now();
    // A long healthy spell since the last ejection forgives the history.
    if (entry.returnedAtMs !== undefined && now - entry.returnedAtMs >= maxEjectionMs) entry.timesEjected = 0;
    entry.timesEjected++;
    const durationMs = Math.min(baseEjectionMs * entry.timesEjected, maxEjectionMs);
    entry.ejectedUntilMs = now + durationMs;
    entry.timer = this.#clock.setTimeout(() => this.#return(key, entry), durationMs);
    this.#onEject?.(key, durationMs);
    this.#publish();
  }

  #return(key: string, entry: Entry): void {
    if (this.#closed || this.#entries.get(key) !== entry) return;
    entry.ejectedUntilMs = undefined;
    entry.consecutiveFailures = 0;
    entry.timer = undefined;
    entry.returnedAtMs = this.#clock.now();
    this.#publish();
  }

  #publish(): void {
    const ejected = new Set<string>();
    for (const [key, e] of this.#entries) if (e.ejectedUntilMs !== undefined) ejected.add(key);
    this.#ejected = ejected;
    this.#onChange?.(ejected);
  }
}
