/**
 * Load-aware zone routing (in the spirit of Linkerd's HAZL). When the caller's zone is known
 * and routing is on, picks stay on endpoints of the caller's zone while those endpoints' load
 * stays within `loadBand` of the fleet's; beyond it a growing fraction spills over to the
 * other zones, and comes back as the zone recovers.
 *
 * Load is the mean response latency (`EndpointLoad.averageMs`): every client sees the same
 * pods answer, so — unlike in-flight counts, which each balancer sees only for its own
 * requests — it compares zones fairly from any one balancer. To keep the other zones'
 * figures current, `probePercent` of picks go out of zone even in band.
 *
 * The caller's zone is `zone`, else the one discovery learnt (`EndpointSet.callerZone`: the
 * Kubernetes source reads its node's `topology.kubernetes.io/zone` label via `NODE_NAME`).
 *
 * Local endpoints: when every eligible endpoint carries EndpointSlice hints, those hinted
 * for the caller's zone (`hints.forZones`, as kube-proxy does); otherwise those whose `zone`
 * is the caller's. Mode `auto` (default) follows the Service: on when its
 * `trafficDistribution` is `PreferClose`, `PreferSameZone` or `PreferSameNode`, or when its
 * slices carry zone hints; `on` always; `off` never.
 */
import type { Endpoint } from '../../core/endpoint.js';
import type { EndpointSet } from '../../core/endpoint-set.js';
import { opt, type Parsed, parseOptions } from '../../core/options.js';
import type { LoadTracker } from '../endpoint-load.js';

export const zoneRoutingSpec = {
  /** The caller's zone (e.g. from `topology.kubernetes.io/zone`); unset = no zone preference. */
  zone: opt.string({ nonEmpty: true, optional: true }),
  /** `auto` (follow the Service's trafficDistribution and hints), `on` or `off`; default `auto`. */
  mode: opt.oneOf(['auto', 'on', 'off'] as const, { default: 'auto' }),
  /** The local zone's load may exceed the fleet's by this fraction before traffic spills; default 0.2. */
  loadBand: opt.number({ min: 0, exclusiveMin: true, default: 0.2 }),
  /** Percent of picks sent to other zones while in band, to keep their figures current; default 2. */
  probePercent: opt.number({ min: 0, max: 50, default: 2 }),
  /** Most of the traffic that may spill to other zones, percent (at most 99: the zone keeps some figures); default 90. */
  maxSpillPercent: opt.number({ min: 0, max: 99, default: 90 }),
};

export type ZoneRoutingOptions = Parsed<typeof zoneRoutingSpec>;

/**
 * Validates zone-routing options (unknown keys rejected).
 *
 * @example
 * parseZoneRoutingOptions({ zone: 'eu-west-1a' }) // → { zone: 'eu-west-1a', mode: 'auto', loadBand: 0.2, ... }
 */
export function parseZoneRoutingOptions(input: unknown, component = 'zone routing'): ZoneRoutingOptions {
  return parseOptions(component, input, zoneRoutingSpec);
}

const PREFERS_ZONE = new Set(['PreferClose', 'PreferSameZone', 'PreferSameNode']);
/** Spill change per control step, as a fraction of all traffic. */
const SPILL_STEP = 0.02;
/** Weight of one step's load ratio in the smoothed ratio the controller acts on. */
const RATIO_WEIGHT = 0.2;

/** What the zone controller decided, for stats. */
export interface ZoneRoutingState {
  readonly zone: string | undefined;
  readonly active: boolean;
  /** Fraction of picks sent out of zone now (0..1), probe included. */
  readonly spill: number;
  /** Mean latency (ms) of local endpoints and of all endpoints with figures; 0 when unknown. */
  readonly localLoadMs: number;
  readonly fleetLoadMs: number;
}

export class ZonePreference {
  readonly options: ZoneRoutingOptions;
  #active = false;
  #local: ReadonlySet<string> = new Set();
  #spill = 0;
  #localLoadMs = 0;
  #fleetLoadMs = 0;
  #zone: string | undefined;
  /** Local load / fleet load, smoothed over steps (latencies are noisy); 0 = no figure yet. */
  #ratio = 0;

  constructor(options: ZoneRoutingOptions) {
    this.options = options;
  }

  /** True while zone preference shapes picks (the controller must keep running). */
  get active(): boolean {
    return this.#active;
  }

  /** Follows a new snapshot: decides whether routing is on and which endpoints are local. */
  update(set: EndpointSet, eligible: readonly Endpoint[]): void {
    const { mode } = this.options;
    const zone = this.options.zone ?? set.callerZone;
    this.#zone = zone;
    const hinted = eligible.length > 0 && eligible.every((e) => e.forZones !== undefined);
    const wanted = mode === 'on' || (mode === 'auto' && (PREFERS_ZONE.has(set.trafficDistribution ?? '') || hinted));
    const local = new Set<string>();
    if (zone !== undefined && wanted) {
      for (const e of eligible) {
        if (hinted ? e.forZones?.includes(zone) : e.zone === zone) local.add(e.key);
      }
    }
    this.#local = local;
    // Preference needs local endpoints and somewhere else to spill to.
    this.#active = local.size > 0 && local.size < eligible.length;
    if (!this.#active) {
      this.#spill = 0;
      this.#ratio = 0;
    }
  }

  /** One control step: compares the local zone's load with the fleet's and moves the spill. */
  step(endpoints: readonly Endpoint[], loads: LoadTracker): void {
    if (!this.#active) return;
    let localSum = 0;
    let localN = 0;
    let fleetSum = 0;
    let fleetN = 0;
    for (const e of endpoints) {
      const load = loads.peek(e.key);
      if (load === undefined || load.observations === 0) continue;
      fleetSum += load.averageMs;
      fleetN++;
      if (this.#local.has(e.key)) {
        localSum += load.averageMs;
        localN++;
      }
    }
    this.#localLoadMs = localN === 0 ? 0 : localSum / localN;
    this.#fleetLoadMs = fleetN === 0 ? 0 : fleetSum / fleetN;
    if (localN === 0 || fleetN === localN) return;
    const now = this.#localLoadMs / this.#fleetLoadMs;
    const ratio = this.#ratio === 0 ? now : this.#ratio + (now - this.#ratio) * RATIO_WEIGHT;
    this.#ratio = ratio;
    const max = this.options.maxSpillPercent / 100;
    // Hysteresis: spill more above the band, less below half of it, hold in between.
    if (ratio > 1 + this.options.loadBand) this.#spill = Math.min(max, this.#spill + SPILL_STEP);
    else if (ratio < 1 + this.options.loadBand / 2) this.#spill = Math.max(0, this.#spill - SPILL_STEP);
  }

  /** True for an endpoint of the caller's zone. */
  isLocal(key: string): boolean {
    return this.#local.has(key);
  }

  /** The share of picks that goes out of zone now: the spill, and never less than the probe. */
  get outOfZoneShare(): number {
    return Math.max(this.#spill, this.options.probePercent / 100);
  }

  state(): ZoneRoutingState {
    return {
      zone: this.#zone ?? this.options.zone,
      active: this.#active,
      spill: this.#active ? this.outOfZoneShare : 0,
      localLoadMs: this.#localLoadMs,
      fleetLoadMs: this.#fleetLoadMs,
    };
  }
}
