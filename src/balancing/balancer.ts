/**
 * The stateful half of balancing. A `Balancer` receives endpoint snapshots (and the outlier
 * detector's ejections), keeps the load records, and publishes a fresh immutable `Picker`
 * whenever what may be picked changes. The client, the proxy and the simulator all balance
 * through this class.
 *
 * Weights that move with time — slow start, the herding guard, zone preference, weights from
 * load reports, the pushback penalty (see `shaping/weight-shaper.ts`) — are applied here, not
 * in pickers: while any of them is moving the Balancer re-plans on a coarse tick
 * (`weightRefreshMs`) and publishes a new picker only when a weight changed, so `pick()` stays
 * synchronous, clock-free and allocation-free. A pushback from an endpoint re-plans at once
 * when no tick is armed (the tracker tells the Balancer), so the penalty starts with the first
 * 429, not a tick later; likewise the response that ends an endpoint's herding guard re-plans
 * at once, so a new endpoint is not drawn at its guarded weight until the next tick.
 */
import { type Clock, systemClock, type TimerHandle } from '../core/clock.js';
import type { Endpoint } from '../core/endpoint.js';
import { EndpointSet, type EndpointSetDiff } from '../core/endpoint-set.js';
import { describeValue, ErrorCodes, EvenlbError } from '../core/errors.js';
import { optionError } from '../core/options.js';
import { createRandom, type Random } from '../core/random.js';
import { type LoadOptions, LoadTracker, parseLoadOptions } from './endpoint-load.js';
import {
  NONE,
  type NoneReason,
  type PickContext,
  type Picker,
  type PickFn,
  type PickResult,
  type TrackedEndpoint,
} from './picker.js';
import { ensureBuiltinPolicies } from './policies/index.js';
import { type BalancingPolicy, getPolicy, type LoadProber, type PickerBuilder } from './policy.js';
import { type HerdingGuardOptions, parseHerdingGuardOptions } from './shaping/herding-guard.js';
import { type PushbackOptions, parsePushbackOptions } from './shaping/pushback-penalty.js';
import { parseSlowStartOptions, type SlowStartOptions } from './shaping/slow-start.js';
import { type ShapedEndpoint, WeightShaper } from './shaping/weight-shaper.js';
import { parseZoneRoutingOptions, type ZoneRoutingOptions, type ZoneRoutingState } from './shaping/zone-preference.js';

/** Default `BalancerOptions.weightRefreshMs`. */
const DEFAULT_WEIGHT_REFRESH_MS = 250;

/** Per-endpoint weights as the current picker uses them (stats and metrics). */
export interface EndpointWeightState {
  readonly key: string;
  /** Effective relative weight in the current picker; 0 when zone preference leaves it out. */
  readonly weight: number;
  /** Slow-start multiplier, (0, 1]; 1 when not ramping. */
  readonly slowStart: number;
  /** True while the herding guard holds its draw weight down. */
  readonly guarded: boolean;
}

export interface BalancerOptions {
  /** A registered policy name; default `least-request`. */
  readonly policy?: string;
  /** The policy's own options, validated by the policy. */
  readonly policyOptions?: unknown;
  /** Default: the shared `loads` tracker's clock, else the system clock. */
  readonly clock?: Clock;
  readonly random?: Random;
  /**
   * Load-signal tuning (default RTT, EWMA decay); missing fields take the defaults. Ignored
   * when `loads` is given. A policy that declares load options (`peak-ewma`'s `defaultRttMs`,
   * `decayMs`) applies them here; setting the same field differently in both places is an error.
   */
  readonly loadOptions?: Partial<LoadOptions>;
  /**
   * Share another tracker's load records instead of creating one (two balancers over the same
   * endpoints see one load signal). The policy's declared load options must match its options.
   */
  readonly loads?: LoadTracker;
  /** Slow start for newly ready endpoints (`windowMs` 0, the default, is off). */
  readonly slowStart?: Partial<SlowStartOptions>;
  /** Herding guard for `least-request` / `peak-ewma`; on by default, `false` switches it off. */
  readonly herdingGuard?: Partial<HerdingGuardOptions> | false;
  /**
   * The pushback penalty for endpoints answering 429, 503 or RESOURCE_EXHAUSTED (transports call
   * `EndpointLoad.pushback()`): on by default (`windowMs` 5,000, `factor` 10); `false` switches it
   * off. Hash policies are never biased.
   */
  readonly pushback?: Partial<PushbackOptions> | false;
  /** Load-aware zone preference; inactive unless the caller's zone is known. */
  readonly zoneRouting?: Partial<ZoneRoutingOptions>;
  /** How often moving weights (ramps, guards, zone spill) are re-planned, ms; default 250. */
  readonly weightRefreshMs?: number;
  /** Out-of-band load probes for policies that use them (`PolicyEnv.prober`); none by default. */
  readonly prober?: LoadProber;
}

/**
 * The load options a balancer's `LoadTracker` uses: defaults, then `loadOptions`, then what
 * the policy's options declare (`BalancingPolicy.loadOptions`). A field set differently by the
 * caller and by the policy is an `EVENLB_INVALID_OPTION` error naming both, never a silent pick.
 *
 * @example
 * const policy = getPolicy('peak-ewma');
 * resolveLoadOptions(policy, policy.parseOptions({ decayMs: 5000 })) // → { defaultRttMs: 30, decayMs: 5000 }
 */
export function resolveLoadOptions(
  policy: BalancingPolicy,
  parsedPolicyOptions: unknown,
  loadOptions?: Partial<LoadOptions>,
): LoadOptions {
  const base = parseLoadOptions(loadOptions, 'Balancer loadOptions');
  const declared = policy.loadOptions?.(parsedPolicyOptions) ?? {};
  const out: { -readonly [K in keyof LoadOptions]: number } = { ...base };
  for (const field of ['defaultRttMs', 'decayMs'] as const) {
    const fromPolicy = declared[field];
    if (fromPolicy === undefined) continue;
    const fromCaller = loadOptions?.[field];
    if (fromCaller !== undefined && fromCaller !== fromPolicy)
      throw loadConflict(policy.name, field, fromPolicy, fromCaller);
    out[field] = fromPolicy;
  }
  return Object.freeze(out);
}

function loadConflict(
  policy: string,
  field: string,
  fromPolicy: number,
  other: unknown,
  where = 'loadOptions',
): EvenlbError {
  return new EvenlbError(
    ErrorCodes.INVALID_OPTION,
    `Balancer: ${policy} policy option "${field}" is ${fromPolicy} but ${where}.${field} is ${describeValue(other)}; set it in one place`,
    { details: { component: 'Balancer', field: `policyOptions.${field}`, expected: String(fromPolicy) } },
  );
}

class PublishedPicker implements Picker {
  readonly endpoints: readonly TrackedEndpoint[];
  readonly #pickFn: PickFn | undefined;
  readonly #none: NoneReason;

  constructor(endpoints: readonly TrackedEndpoint[], pickFn: PickFn | undefined, none: NoneReason) {
    this.endpoints = endpoints;
    this.#pickFn = pickFn;
    this.#none = none;
  }

  pick(context?: PickContext): PickResult {
    const fn = this.#pickFn;
    if (fn === undefined) return NONE[this.#none];
    const picked = fn(context);
    const exclude = context?.exclude;
    if (exclude === undefined || picked.endpoint.key !== exclude || this.endpoints.length === 1) return picked;
    // Retry on another endpoint: ask the policy again a few times, then take the first other one.
    for (let i = 0; i < 3; i++) {
      const again = fn(context);
      if (again.endpoint.key !== exclude) return again;
    }
    for (const t of this.endpoints) if (t.endpoint.key !== exclude) return t.result;
    return picked;
  }
}

export class Balancer {
  readonly policy: BalancingPolicy;
  readonly loads: LoadTracker;
  readonly #builder: PickerBuilder;
  #set: EndpointSet = EndpointSet.EMPTY;
  #ejected: ReadonlySet<string> = new Set();
  #picker: Picker = new PublishedPicker([], undefined, 'no-endpoints');
  readonly #listeners = new Set<(picker: Picker) => void>();
  readonly #clock: Clock;
  readonly #shaper: WeightShaper;
  readonly #refreshMs: number;
  #kept: readonly Endpoint[] = [];
  #plan: readonly ShapedEndpoint[] = [];
  #timer: TimerHandle | undefined;
  #closed = false;
  readonly #stopPushback: () => void;
  /** Disarms the response watches of the guarded endpoints in `#plan`. */
  #stopGuardWatches: (() => void)[] = [];

  constructor(options: BalancerOptions = {}) {
    ensureBuiltinPolicies();
    this.policy = getPolicy(options.policy ?? 'least-request');
    const clock = options.clock ?? options.loads?.clock ?? systemClock;
    const parsed = this.policy.parseOptions(options.policyOptions);
    if (options.loads === undefined) {
      this.loads = new LoadTracker(clock, resolveLoadOptions(this.policy, parsed, options.loadOptions));
    } else {
      // A shared tracker is already configured: the policy's declared settings must agree with it.
      const declared = this.policy.loadOptions?.(parsed) ?? {};
      for (const field of ['defaultRttMs', 'decayMs'] as const) {
        const v = declared[field];
        if (v !== undefined && v !== options.loads.options[field]) {
          throw loadConflict(this.policy.name, field, v, options.loads.options[field], 'the shared load tracker');
        }
      }
      this.loads = options.loads;
    }
    const random = options.random ?? createRandom();
    this.#builder = this.policy.create(
      parsed,
      options.prober === undefined ? { clock, random } : { clock, random, prober: options.prober },
    );
    this.#clock = clock;
    const refresh = options.weightRefreshMs ?? DEFAULT_WEIGHT_REFRESH_MS;
    if (typeof refresh !== 'number' || !Number.isFinite(refresh) || refresh < 1) {
      throw optionError('Balancer', 'weightRefreshMs', 'a finite number >= 1', refresh);
    }
    this.#refreshMs = refresh;
    this.#shaper = new WeightShaper(
      {
        slowStart: parseSlowStartOptions(options.slowStart, 'Balancer slowStart'),
        herdingGuard: parseHerdingGuardOptions(options.herdingGuard, 'Balancer herdingGuard'),
        zoneRouting: parseZoneRoutingOptions(options.zoneRouting, 'Balancer zoneRouting'),
        choiceCount: this.policy.choiceCount?.(parsed),
        followsWeights: this.policy.kind === 'load' && this.policy.ignoresWeights !== true,
        pushback: parsePushbackOptions(options.pushback, 'Balancer pushback'),
        shapesPushback: this.policy.kind === 'load',
        reportedWeights: this.policy.reportedWeights?.(parsed),
      },
      clock,
    );
    this.#stopPushback = this.loads.onPushback(() => this.#pushedBack());
  }

  /** The current immutable picker. Read it per request; it is replaced on every change. */
  get picker(): Picker {
    return this.#picker;
  }

  get endpointSet(): EndpointSet {
    return this.#set;
  }

  get ejected(): ReadonlySet<string> {
    return this.#ejected;
  }

  /** Installs a new endpoint snapshot; returns what changed. */
  update(set: EndpointSet): EndpointSetDiff {
    const diff = EndpointSet.diff(this.#set, set);
    this.#set = set;
    this.loads.prune(set);
    this.#rebuild();
    return diff;
  }

  /** Endpoint keys outlier detection has ejected; they get no new picks. */
  setEjected(keys: ReadonlySet<string>): void {
    this.#ejected = new Set(keys);
    this.#rebuild();
  }

  /** Each picked endpoint's effective weight, slow-start multiplier and guard state. */
  weights(): readonly EndpointWeightState[] {
    return this.#plan.map((s) => ({
      key: s.endpoint.key,
      weight: s.weight,
      slowStart: s.slowStart,
      guarded: s.guarded,
    }));
  }

  /** What zone preference decided (caller's zone, spill, local and fleet load). */
  zoneState(): ZoneRoutingState {
    return this.#shaper.zoneState();
  }

  /** Stops the weight refresh tick; idempotent. The current picker stays usable. */
  close(): void {
    this.#closed = true;
    this.#stopPushback();
    this.#unwatchGuards();
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /** Calls `listener` with every newly published picker; returns an unsubscribe function. */
  onPicker(listener: (picker: Picker) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #rebuild(): void {
    const eligible = this.#set.eligible();
    const kept = this.#ejected.size === 0 ? eligible : eligible.filter((e) => !this.#ejected.has(e.key));
    this.#kept = kept;
    this.#shaper.track(this.#set, eligible, kept, this.loads);
    this.#publish(this.#shaper.plan(kept, this.loads));
    this.#schedule();
  }

  #publish(plan: readonly ShapedEndpoint[]): void {
    this.#plan = plan;
    const eligible = this.#set.eligible();
    let none: NoneReason = 'no-endpoints';
    if (this.#set.size > 0) none = eligible.length === 0 ? 'none-ready' : 'all-ejected';
    const tracked: TrackedEndpoint[] = plan.map(({ endpoint, weight }) => {
      const load = this.loads.get(endpoint.key);
      return Object.freeze({
        endpoint,
        weight,
        load,
        result: Object.freeze({ type: 'picked' as const, endpoint, load }),
      });
    });
    Object.freeze(tracked);
    const fn = tracked.length > 0 ? this.#builder.build(tracked) : undefined;
    this.#picker = new PublishedPicker(tracked, fn, none);
    this.#watchGuards();
    for (const listener of this.#listeners) listener(this.#picker);
  }

  /** Arms a watch on each guarded endpoint of the plan: its guard lifts at that response. */
  #watchGuards(): void {
    this.#unwatchGuards();
    let lifts: ReadonlyMap<string, number> | undefined;
    for (const s of this.#plan) {
      if (!s.guarded) continue;
      lifts ??= this.#shaper.guardLifts();
      const atLeast = lifts.get(s.endpoint.key);
      const load = this.loads.peek(s.endpoint.key);
      if (atLeast === undefined || load === undefined) continue;
      this.#stopGuardWatches.push(this.loads.watchResponses(load.index, atLeast, () => this.#replanNow()));
    }
  }

  #unwatchGuards(): void {
    if (this.#stopGuardWatches.length === 0) return;
    for (const stop of this.#stopGuardWatches) stop();
    this.#stopGuardWatches = [];
  }

  /** Re-plans on the current figures, publishes if a weight changed, and keeps the tick armed. */
  #replanNow(): void {
    if (this.#closed) return;
    const plan = this.#shaper.plan(this.#kept, this.loads);
    if (!samePlan(plan, this.#plan)) this.#publish(plan);
    this.#schedule();
  }

  /** An endpoint pushed back: re-plan now unless a tick is already armed (it will see the pushback). */
  #pushedBack(): void {
    if (this.#closed || !this.#shaper.pushedBack() || this.#timer !== undefined) return;
    this.#replanNow();
  }

  /** Arms the refresh tick while weights move with time. */
  #schedule(): void {
    if (this.#closed || this.#timer !== undefined || !this.#shaper.moving) return;
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      if (this.#closed) return;
      this.#shaper.step(this.#kept, this.loads);
      this.#replanNow();
    }, this.#refreshMs);
  }
}

/** True when two plans list the same endpoints with the same weights (a relative change below 0.1% is none). */
function samePlan(a: readonly ShapedEndpoint[], b: readonly ShapedEndpoint[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as ShapedEndpoint;
    const y = b[i] as ShapedEndpoint;
    if (x.endpoint !== y.endpoint || Math.abs(x.weight - y.weight) > 1e-3 * Math.max(x.weight, y.weight)) return false;
  }
  return true;
}
