/**
 * Per-endpoint load, as pickers see it: requests in flight, a peak-sensitive EWMA of latency
 * (Linkerd's / Finagle's model) and recent errors. Callers record each request's start and
 * end; pickers only read. A record outlives picker rebuilds (it is keyed by endpoint key in a
 * `LoadTracker`), so a changed endpoint keeps its history.
 *
 * Peak EWMA: an observed latency above the estimate replaces it at once (peaks count fully);
 * one below it is blended with weight `exp(-elapsed / decayMs)` on the old value. Reading the
 * estimate decays it toward zero by the time since the last observation, so an endpoint that
 * has been quiet is tried again. A new endpoint starts at `defaultRttMs`, not 0.
 */
import type { Clock } from '../core/clock.js';
import { opt, parseOptions } from '../core/options.js';

export interface LoadOptions {
  /** Latency assumed for an endpoint with no observation yet, in ms. */
  readonly defaultRttMs: number;
  /** EWMA time constant in ms: how fast old latency observations fade. */
  readonly decayMs: number;
}

export const defaultLoadOptions: LoadOptions = Object.freeze({ defaultRttMs: 30, decayMs: 10_000 });

/** The option spec of `LoadOptions`; both fields optional, defaults from `defaultLoadOptions`. */
export const loadOptionsSpec = {
  /** Latency assumed for an endpoint with no observation yet, in ms; > 0 so a new endpoint never looks free. */
  defaultRttMs: opt.number({ min: 0, exclusiveMin: true, default: defaultLoadOptions.defaultRttMs }),
  /** EWMA time constant in ms. */
  decayMs: opt.number({ min: 0, exclusiveMin: true, default: defaultLoadOptions.decayMs }),
};

/**
 * Validates (possibly partial) load options and fills defaults.
 *
 * @example
 * parseLoadOptions({ decayMs: 5000 }) // → { defaultRttMs: 30, decayMs: 5000 }
 */
export function parseLoadOptions(input: Partial<LoadOptions> | undefined, component = 'load tracker'): LoadOptions {
  return parseOptions(component, input, loadOptionsSpec);
}

/** Weight of one observation in `EndpointLoad.averageMs`. */
const AVERAGE_WEIGHT = 1 / 16;

export class EndpointLoad {
  readonly key: string;
  /** Requests started and not yet ended. */
  inFlight = 0;
  /** Requests started, ever. */
  requests = 0;
  /** Requests that ended in error, ever. */
  errors = 0;
  /** Errors since the last success. */
  consecutiveErrors = 0;
  /** Requests that ended successfully, ever. */
  successes = 0;
  readonly #clock: Clock;
  readonly #decayMs: number;
  #rttMs: number;
  #stampMs: number;
  #averageMs = 0;
  #observations = 0;

  constructor(key: string, clock: Clock, options: LoadOptions = defaultLoadOptions) {
    this.key = key;
    this.#clock = clock;
    this.#decayMs = options.decayMs;
    this.#rttMs = options.defaultRttMs;
    this.#stampMs = clock.now();
  }

  /** Records a request start; returns the start time to hand back to `end`. */
  start(): number {
    this.inFlight++;
    this.requests++;
    return this.#clock.now();
  }

  /**
   * Records a request end. `ok` false counts an error (a 5xx or a transport failure).
   * Latency is observed either way: a slow failure is still slow.
   */
  end(startMs: number, ok: boolean): void {
    if (this.inFlight > 0) this.inFlight--;
    const now = this.#clock.now();
    this.observe(now - startMs, now);
    if (ok) {
      this.successes++;
      this.consecutiveErrors = 0;
    } else {
      this.errors++;
      this.consecutiveErrors++;
    }
  }

  /** Feeds one latency observation (ms) into the peak EWMA and the plain average. */
  observe(rttMs: number, now = this.#clock.now()): void {
    this.#averageMs = this.#observations === 0 ? rttMs : this.#averageMs + (rttMs - this.#averageMs) * AVERAGE_WEIGHT;
    this.#observations++;
    const current = this.latencyMs(now);
    if (rttMs > current) {
      this.#rttMs = rttMs;
    } else {
      const w = Math.exp(-(now - this.#stampMs) / this.#decayMs);
      this.#rttMs = current * w + rttMs * (1 - w);
    }
    this.#stampMs = now;
  }

  /**
   * Sets the starting estimate of a record that has observed nothing yet (the herding guard
   * seeds it with the fleet's typical latency); ignored once a latency was observed.
   */
  seed(rttMs: number, now = this.#clock.now()): void {
    if (this.#observations > 0 || !(rttMs > 0)) return;
    this.#rttMs = rttMs;
    this.#stampMs = now;
  }

  /** Latencies observed, ever. */
  get observations(): number {
    return this.#observations;
  }

  /**
   * A plain exponentially weighted mean of observed latencies (ms; each observation weighs
   * 1/16), without peak sensitivity or decay: comparable across endpoints whatever their
   * traffic (zone load). 0 before the first observation.
   */
  get averageMs(): number {
    return this.#averageMs;
  }

  /** The estimate (ms) as of the last observation, before any decay since. */
  get estimateMs(): number {
    return this.#rttMs;
  }

  /** When the estimate was last set (clock ms): the last observation, or the record's creation. */
  get estimatedAtMs(): number {
    return this.#stampMs;
  }

  /** The EWMA time constant (ms) of this record. */
  get decayMs(): number {
    return this.#decayMs;
  }

  /** The latency estimate in ms, decayed toward 0 by the time since the last observation. */
  latencyMs(now = this.#clock.now()): number {
    const elapsed = now - this.#stampMs;
    return elapsed <= 0 ? this.#rttMs : this.#rttMs * Math.exp(-elapsed / this.#decayMs);
  }

  /** Peak-EWMA cost: latency estimate × (in-flight + 1). */
  cost(now = this.#clock.now()): number {
    return this.latencyMs(now) * (this.inFlight + 1);
  }
}

/** Owns the load records of one balancer (or one simulated client), keyed by endpoint key. */
export class LoadTracker {
  readonly clock: Clock;
  readonly options: LoadOptions;
  readonly #loads = new Map<string, EndpointLoad>();

  /** `options` may be partial; missing fields take `defaultLoadOptions`, bad values are rejected. */
  constructor(clock: Clock, options: Partial<LoadOptions> = defaultLoadOptions) {
    this.clock = clock;
    this.options = parseLoadOptions(options);
  }

  /** The record for `key`, created on first use. */
  get(key: string): EndpointLoad {
    let load = this.#loads.get(key);
    if (load === undefined) {
      load = new EndpointLoad(key, this.clock, this.options);
      this.#loads.set(key, load);
    }
    return load;
  }

  peek(key: string): EndpointLoad | undefined {
    return this.#loads.get(key);
  }

  /** Drops records not in `keep` that have nothing in flight. */
  prune(keep: ReadonlySet<string> | { has(key: string): boolean }): void {
    for (const [key, load] of this.#loads) if (!keep.has(key) && load.inFlight === 0) this.#loads.delete(key);
  }

  values(): IterableIterator<EndpointLoad> {
    return this.#loads.values();
  }
}
