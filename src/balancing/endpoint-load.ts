/**
 * Per-endpoint load, as pickers see it: requests in flight, a peak-sensitive EWMA of latency
 * (Linkerd's / Finagle's model) and recent errors. Callers record each request's start and
 * end; pickers only read. A record outlives picker rebuilds (it is keyed by endpoint key in a
 * `LoadTracker`), so a changed endpoint keeps its history.
 *
 * Storage: a `LoadTracker` keeps every record's numbers in typed arrays at the record's index
 * (in-flight counts in one dense `Int32Array`, the rest as one 64-byte row of a
 * `Float64Array`), not one object per endpoint: a pick compares two in-flight counts out of a
 * few kilobytes, and a fleet of balancers over thousands of endpoints stays small and cache
 * friendly. `EndpointLoad` is a handle on one record (the API callers use); pickers and the
 * simulator may go through the tracker's index methods (`inFlightAt`, `startAt`, `endAt`).
 *
 * Peak EWMA: an observed latency above the estimate replaces it at once (peaks count fully);
 * one below it is blended with weight `exp(-elapsed / decayMs)` on the old value. Reading the
 * estimate decays it toward zero by the time since the last observation, so an endpoint that
 * has been quiet is tried again. A new endpoint starts at `defaultRttMs`, not 0.
 *
 * What the endpoint says of itself — load reports, probe answers, pushback — sits beside these
 * figures in the tracker's `ReportedLoad` (see `reported-load.ts`), made on first use.
 */
import type { Clock } from '../core/clock.js';
import { opt, parseOptions } from '../core/options.js';
import type { LoadReport } from './load-report.js';
import { ReportedLoad, ReportField, type ReportFieldName, unreportedField } from './reported-load.js';
import { ResponseWatches } from './response-watches.js';

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

// The float fields of one record: row `index * STRIDE` of `LoadTracker`'s stats array.
const REQUESTS = 0;
const ERRORS = 1;
const CONSECUTIVE_ERRORS = 2;
const SUCCESSES = 3;
const RTT_MS = 4;
const STAMP_MS = 5;
const AVERAGE_MS = 6;
const OBSERVATIONS = 7;
const STRIDE = 8;

/** Records a tracker has room for before it first grows (doubling). */
const INITIAL_CAPACITY = 4;

/** Set by `LoadTracker`'s static block: gives a new handle its index in `tracker`. */
let attachRecord: (tracker: LoadTracker, load: EndpointLoad) => number;
/** Set by `EndpointLoad`'s static block: points a handle at another tracker's record. */
let rebindRecord: (load: EndpointLoad, tracker: LoadTracker, index: number) => void;

/**
 * One endpoint's load record: a handle on row `index` of its `LoadTracker`. Created by
 * `LoadTracker.get()`; `new EndpointLoad(key, clock, options)` makes a stand-alone record (in
 * a tracker of its own). A record pruned from its tracker keeps its figures in a tracker of
 * its own, so a handle held past the prune (an old picker, a call in progress) stays valid.
 */
export class EndpointLoad {
  readonly key: string;
  #tracker: LoadTracker;
  #index: number;

  static {
    rebindRecord = (load, tracker, index) => {
      load.#tracker = tracker;
      load.#index = index;
    };
  }

  /**
   * `tracker` is for `LoadTracker.get()` only (it passes itself for a key it does not hold yet;
   * `clock` and `options` are then the tracker's). Without it the record is stand-alone.
   */
  constructor(key: string, clock: Clock, options: LoadOptions = defaultLoadOptions, tracker?: LoadTracker) {
    this.key = key;
    this.#tracker = tracker ?? new LoadTracker(clock, options);
    this.#index = attachRecord(this.#tracker, this);
  }

  /** The tracker holding this record's figures (changes once, when the record is pruned). */
  get tracker(): LoadTracker {
    return this.#tracker;
  }

  /** This record's index in `tracker` (for the tracker's index methods). */
  get index(): number {
    return this.#index;
  }

  /** Requests started and not yet ended. */
  get inFlight(): number {
    return this.#tracker.inFlightAt(this.#index);
  }

  /** Requests started, ever. */
  get requests(): number {
    return this.#tracker.field(this.#index, REQUESTS);
  }

  /** Requests that ended in error, ever. */
  get errors(): number {
    return this.#tracker.field(this.#index, ERRORS);
  }

  /** Errors since the last success. */
  get consecutiveErrors(): number {
    return this.#tracker.field(this.#index, CONSECUTIVE_ERRORS);
  }

  /** Requests that ended successfully, ever. */
  get successes(): number {
    return this.#tracker.field(this.#index, SUCCESSES);
  }

  /** Records a request start; returns the start time to hand back to `end`. */
  start(): number {
    return this.#tracker.startAt(this.#index);
  }

  /**
   * Takes back a `start()` whose request never reached the endpoint (it was sent elsewhere, or
   * never began): one request and one in flight fewer, nothing observed.
   */
  withdraw(): void {
    this.#tracker.withdrawAt(this.#index);
  }

  /**
   * Records a request end. `ok` false counts an error (a 5xx or a transport failure).
   * Latency is observed either way: a slow failure is still slow. `now` is the clock's time
   * (read here when not given).
   */
  end(startMs: number, ok: boolean, now?: number): void {
    this.#tracker.endAt(this.#index, startMs, ok, now);
  }

  /** Feeds one latency observation (ms) into the peak EWMA and the plain average. */
  observe(rttMs: number, now = this.#tracker.clock.now()): void {
    this.#tracker.observeAt(this.#index, rttMs, now);
  }

  /**
   * Sets the starting estimate of a record that has observed nothing yet (the herding guard
   * seeds it with the fleet's typical latency); ignored once a latency was observed.
   */
  seed(rttMs: number, now = this.#tracker.clock.now()): void {
    if (this.observations > 0 || !(rttMs > 0)) return;
    this.#tracker.setField(this.#index, RTT_MS, rttMs);
    this.#tracker.setField(this.#index, STAMP_MS, now);
  }

  /** Latencies observed, ever. */
  get observations(): number {
    return this.#tracker.field(this.#index, OBSERVATIONS);
  }

  /**
   * A plain exponentially weighted mean of observed latencies (ms; each observation weighs
   * 1/16), without peak sensitivity or decay: comparable across endpoints whatever their
   * traffic (zone load). 0 before the first observation.
   */
  get averageMs(): number {
    return this.#tracker.field(this.#index, AVERAGE_MS);
  }

  /** The estimate (ms) as of the last observation, before any decay since. */
  get estimateMs(): number {
    return this.#tracker.estimateAt(this.#index);
  }

  /** When the estimate was last set (clock ms): the last observation, or the record's creation. */
  get estimatedAtMs(): number {
    return this.#tracker.estimatedAtMsAt(this.#index);
  }

  /** The EWMA time constant (ms) of this record. */
  get decayMs(): number {
    return this.#tracker.options.decayMs;
  }

  /** The latency estimate in ms, decayed toward 0 by the time since the last observation. */
  latencyMs(now = this.#tracker.clock.now()): number {
    return this.#tracker.latencyAt(this.#index, now);
  }

  /**
   * Records a load report the endpoint sent (`endpoint-load-metrics`): its utilization
   * (`application_utilization` when positive, else `cpu_utilization`), rates and
   * `named_metrics.inflight`. Read back with `reported(...)`.
   */
  report(report: LoadReport, now = this.#tracker.clock.now()): void {
    this.#tracker.reported.report(this.#index, report, now);
  }

  /** Records a probe answer: the server's requests in flight and its latency estimate (ms). */
  probed(inFlight: number, latencyMs: number, now = this.#tracker.clock.now()): void {
    this.#tracker.reported.probed(this.#index, inFlight, latencyMs, now);
  }

  /**
   * Records pushback from the endpoint (it answered 429, 503 or RESOURCE_EXHAUSTED) and tells
   * the tracker's pushback listeners (a `Balancer` starts its pushback penalty).
   */
  pushback(now = this.#tracker.clock.now()): void {
    this.#tracker.pushbackAt(this.#index, now);
  }

  /**
   * What the endpoint last said of itself (`report`, `probed`, `pushback`): NaN for a figure
   * never reported, 0 for a count never bumped.
   *
   * @example
   * load.report({ cpuUtilization: 0.4 }); load.reported('utilization') // → 0.4
   */
  reported(field: ReportFieldName): number {
    return this.#tracker.reportedField(this.#index, ReportField[field]);
  }

  /** Peak-EWMA cost: latency estimate × (in-flight + 1). */
  cost(now = this.#tracker.clock.now()): number {
    return this.latencyMs(now) * (this.inFlight + 1);
  }
}

/**
 * Owns the load records of one balancer (or one simulated client), keyed by endpoint key. The
 * figures sit in typed arrays indexed by record (`EndpointLoad.index`); the index methods
 * (`inFlightAt`, `startAt`, `endAt`, ...) are the hot path for pickers and the simulator and
 * touch nothing else. An index is valid while its record is in the tracker: `prune()` frees
 * it for reuse (the pruned handle moves to a tracker of its own).
 */
export class LoadTracker {
  readonly clock: Clock;
  readonly options: LoadOptions;
  readonly #decayMs: number;
  readonly #defaultRttMs: number;
  readonly #loads = new Map<string, EndpointLoad>();
  /**
   * Requests in flight by record index: the array pickers compare. Read-only for callers, and
   * replaced when the tracker grows — read it through the tracker on every use, never keep it.
   */
  inFlightCounts = new Int32Array(INITIAL_CAPACITY);
  #stats = new Float64Array(INITIAL_CAPACITY * STRIDE);
  #reported: ReportedLoad | undefined;
  readonly #pushbackListeners = new Set<(index: number) => void>();
  readonly #watches = new ResponseWatches();
  /** Indices handed out so far (free or in use). */
  #used = 0;
  /** Indices freed by `prune()`, reused first. */
  readonly #free: number[] = [];

  static {
    attachRecord = (tracker, load) => tracker.#attach(load);
  }

  /** `options` may be partial; missing fields take `defaultLoadOptions`, bad values are rejected. */
  constructor(clock: Clock, options: Partial<LoadOptions> = defaultLoadOptions) {
    this.clock = clock;
    this.options = parseLoadOptions(options);
    this.#decayMs = this.options.decayMs;
    this.#defaultRttMs = this.options.defaultRttMs;
  }

  /** The record for `key`, created on first use. */
  get(key: string): EndpointLoad {
    return this.#loads.get(key) ?? new EndpointLoad(key, this.clock, this.options, this);
  }

  peek(key: string): EndpointLoad | undefined {
    return this.#loads.get(key);
  }

  /** Drops records not in `keep` that have nothing in flight. */
  prune(keep: ReadonlySet<string> | { has(key: string): boolean }): void {
    for (const [key, load] of this.#loads) {
      if (keep.has(key) || this.inFlightCounts[load.index] !== 0) continue;
      this.#loads.delete(key);
      this.#detach(load);
    }
  }

  values(): IterableIterator<EndpointLoad> {
    return this.#loads.values();
  }

  /** Requests in flight on record `index`. */
  inFlightAt(index: number): number {
    return this.inFlightCounts[index] as number;
  }

  /** `EndpointLoad.start()` of record `index`. */
  startAt(index: number): number {
    const row = index * STRIDE;
    this.inFlightCounts[index] = (this.inFlightCounts[index] as number) + 1;
    this.#stats[row + REQUESTS] = (this.#stats[row + REQUESTS] as number) + 1;
    return this.clock.now();
  }

  /**
   * `EndpointLoad.end()` of record `index`. Only for a request counted by `startAt` (or
   * `start()`) of this same tracker: a record with requests in flight is never pruned, so its
   * index stays valid until they end.
   */
  endAt(index: number, startMs: number, ok: boolean, now = this.clock.now()): void {
    const inFlight = this.inFlightCounts;
    const current = inFlight[index] as number;
    if (current > 0) inFlight[index] = current - 1;
    this.observeAt(index, now - startMs, now);
    const row = index * STRIDE;
    const stats = this.#stats;
    if (ok) {
      stats[row + SUCCESSES] = (stats[row + SUCCESSES] as number) + 1;
      stats[row + CONSECUTIVE_ERRORS] = 0;
    } else {
      stats[row + ERRORS] = (stats[row + ERRORS] as number) + 1;
      stats[row + CONSECUTIVE_ERRORS] = (stats[row + CONSECUTIVE_ERRORS] as number) + 1;
    }
    if (this.#watches.size !== 0) {
      this.#watches.check(index, (stats[row + SUCCESSES] as number) + (stats[row + ERRORS] as number));
    }
  }

  /** `EndpointLoad.withdraw()` of record `index`. */
  withdrawAt(index: number): void {
    const inFlight = this.inFlightCounts;
    if ((inFlight[index] as number) > 0) inFlight[index] = (inFlight[index] as number) - 1;
    const row = index * STRIDE + REQUESTS;
    if ((this.#stats[row] as number) > 0) this.#stats[row] = (this.#stats[row] as number) - 1;
  }

  /** `EndpointLoad.observe()` of record `index`. */
  observeAt(index: number, rttMs: number, now: number): void {
    const stats = this.#stats;
    const row = index * STRIDE;
    const observations = stats[row + OBSERVATIONS] as number;
    stats[row + AVERAGE_MS] =
      observations === 0
        ? rttMs
        : (stats[row + AVERAGE_MS] as number) + (rttMs - (stats[row + AVERAGE_MS] as number)) * AVERAGE_WEIGHT;
    stats[row + OBSERVATIONS] = observations + 1;
    const current = this.latencyAt(index, now);
    if (rttMs > current) {
      stats[row + RTT_MS] = rttMs;
    } else {
      const w = Math.exp(-(now - (stats[row + STAMP_MS] as number)) / this.#decayMs);
      stats[row + RTT_MS] = current * w + rttMs * (1 - w);
    }
    stats[row + STAMP_MS] = now;
  }

  /** `EndpointLoad.latencyMs()` of record `index`. */
  latencyAt(index: number, now: number): number {
    const row = index * STRIDE;
    const rtt = this.#stats[row + RTT_MS] as number;
    const elapsed = now - (this.#stats[row + STAMP_MS] as number);
    return elapsed <= 0 ? rtt : rtt * Math.exp(-elapsed / this.#decayMs);
  }

  /** `EndpointLoad.estimateMs` of record `index`. */
  estimateAt(index: number): number {
    return this.#stats[index * STRIDE + RTT_MS] as number;
  }

  /** `EndpointLoad.averageMs` of record `index`: plain EWMA of observed latency, 0 before any. */
  averageAt(index: number): number {
    return this.#stats[index * STRIDE + AVERAGE_MS] as number;
  }

  /** `EndpointLoad.estimatedAtMs` of record `index`. */
  estimatedAtMsAt(index: number): number {
    return this.#stats[index * STRIDE + STAMP_MS] as number;
  }

  /** Reported load, probe answers and pushback of every record, by index (made on first use). */
  get reported(): ReportedLoad {
    this.#reported ??= new ReportedLoad(this.inFlightCounts.length);
    return this.#reported;
  }

  /** `EndpointLoad.pushback()` of record `index`: records it, then calls every pushback listener. */
  pushbackAt(index: number, now = this.clock.now()): void {
    this.reported.pushback(index, now);
    for (const listener of this.#pushbackListeners) listener(index);
  }

  /**
   * Calls `listener` with the record index on every pushback recorded here; returns the
   * unsubscribe function. A `Balancer` listens to re-plan weights at once when an endpoint
   * starts pushing back, instead of polling.
   *
   * @example
   * const stop = tracker.onPushback((index) => console.log('pushback from record', index));
   */
  onPushback(listener: (index: number) => void): () => void {
    this.#pushbackListeners.add(listener);
    return () => this.#pushbackListeners.delete(listener);
  }

  /**
   * Calls `listener` once record `index` has answered (successes and errors) `atLeast` times;
   * returns the function that disarms it. The watch goes with the record when it is pruned.
   */
  watchResponses(index: number, atLeast: number, listener: () => void): () => void {
    return this.#watches.add(index, atLeast, listener);
  }

  /** A `ReportField` of record `index`, without making the `ReportedLoad` (NaN / 0 before it exists). */
  reportedField(index: number, field: number): number {
    const r = this.#reported;
    return r === undefined ? unreportedField(field) : r.field(index, field);
  }

  /** @internal A float field of record `index` (`EndpointLoad`'s getters). */
  field(index: number, field: number): number {
    return this.#stats[index * STRIDE + field] as number;
  }

  /** @internal Sets a field of record `index`; field -1 is the in-flight count. */
  setField(index: number, field: number, value: number): void {
    if (field < 0) this.inFlightCounts[index] = value;
    else this.#stats[index * STRIDE + field] = value;
  }

  #attach(load: EndpointLoad): number {
    let index = this.#free.pop();
    if (index === undefined) {
      index = this.#used++;
      if (index === this.inFlightCounts.length) this.#grow();
    }
    const row = index * STRIDE;
    this.inFlightCounts[index] = 0;
    this.#stats.fill(0, row, row + STRIDE);
    this.#stats[row + RTT_MS] = this.#defaultRttMs;
    this.#stats[row + STAMP_MS] = this.clock.now();
    this.#reported?.clear(index);
    this.#loads.set(load.key, load);
    return index;
  }

  /** Moves a pruned record's figures to a tracker of its own and frees its index here. */
  #detach(load: EndpointLoad): void {
    const index = load.index;
    const own = new LoadTracker(this.clock, this.options);
    const row = index * STRIDE;
    own.inFlightCounts[0] = this.inFlightCounts[index] as number;
    own.#stats.set(this.#stats.subarray(row, row + STRIDE), 0);
    if (this.#reported !== undefined) own.reported.copyRow(this.#reported, index, 0);
    own.#used = 1;
    own.#loads.set(load.key, load);
    rebindRecord(load, own, 0);
    this.#watches.clear(index);
    this.#free.push(index);
  }

  #grow(): void {
    const inFlight = new Int32Array(this.inFlightCounts.length * 2);
    inFlight.set(this.inFlightCounts);
    this.inFlightCounts = inFlight;
    const stats = new Float64Array(this.#stats.length * 2);
    stats.set(this.#stats);
    this.#stats = stats;
    this.#reported?.grow(inFlight.length);
  }
}

/**
 * The tracker and record indices behind a picker's load records, when they all sit in one
 * tracker (as a `Balancer` builds them); undefined otherwise. `identity` is true when record i
 * sits at index i (a balancer's first snapshot, and any that adds nothing after a prune), so
 * a picker can skip the index array. Pickers compare loads through `tracker.inFlightAt(...)` so a
 * pick touches the dense arrays, not the handles. A picker outliving a `prune()` may read a
 * reused index: a stale comparison, never a wrong count.
 */
export function loadIndices(
  loads: readonly EndpointLoad[],
): { tracker: LoadTracker; indices: Int32Array; identity: boolean } | undefined {
  const tracker = loads[0]?.tracker;
  if (tracker === undefined) return undefined;
  const indices = new Int32Array(loads.length);
  let identity = true;
  for (let i = 0; i < loads.length; i++) {
    const load = loads[i] as EndpointLoad;
    if (load.tracker !== tracker) return undefined;
    indices[i] = load.index;
    if (load.index !== i) identity = false;
  }
  return { tracker, indices, identity };
}
