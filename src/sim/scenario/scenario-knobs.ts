/**
 * Overrides for a scenario's most-used settings — the CLI's `--pods`, `--max-age`,
 * `--max-surge` and friends. A knob patches the raw scenario object before validation, so a
 * patched built-in or file is checked exactly like one written by hand. A knob that has
 * nothing to patch (`--scale-to` on a scenario without a scale event) is an error naming it.
 */
import { ErrorCodes, EvenlbError } from '../../core/errors.js';

export interface ScenarioKnobs {
  readonly pods?: number;
  readonly connections?: number;
  readonly clients?: number;
  readonly nodes?: number;
  readonly trials?: number;
  readonly ratePerSecond?: number;
  readonly requestsPerClient?: number;
  readonly windowMs?: number;
  readonly bucketMs?: number;
  readonly workers?: number;
  readonly serviceTimeMs?: number;
  readonly readyDelayMs?: number;
  readonly maxConnectionAgeMs?: number;
  readonly ageJitter?: number;
  readonly maxRequestsPerConnection?: number;
  readonly serverMaxConnectionAgeMs?: number;
  readonly serverMaxRequestsPerConnection?: number;
  /** Fair-share shedding on the server, with this tolerance (`--server-fair-share[=tolerance]`). */
  readonly serverFairShareTolerance?: number;
  readonly maxSurge?: number | string;
  readonly maxUnavailable?: number | string;
  readonly scaleTo?: number;
  readonly hashKey?: 'request' | 'client';
  readonly balancerScope?: 'client' | 'shared';
  /** M independent balancer replicas (`clients.balancers`). */
  readonly balancers?: number;
  /** Discovery lag spread: each balancer learns of a change uniformly within [0, this] ms; 0 = at once. */
  readonly discoverySpreadMs?: number;
  readonly slowStartMs?: number;
  readonly herdingGuard?: boolean;
  /** Pods per zone at the start (`pods.zones`). */
  readonly podZones?: readonly number[];
  /** Relative clients per zone (`clients.zones`). */
  readonly clientZones?: readonly number[];
  readonly zoneRouting?: 'off' | 'on';
}

type Obj = Record<string, unknown>;

function child(parent: Obj, key: string): Obj {
  const v = parent[key];
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Obj;
  const fresh: Obj = {};
  parent[key] = fresh;
  return fresh;
}

function notApplicable(knob: string, why: string): EvenlbError {
  return new EvenlbError(ErrorCodes.INVALID_OPTION, `${knob} does not apply: ${why}`, { details: { field: knob } });
}

/**
 * Applies `knobs` to a copy of `raw` (a scenario object as written in YAML).
 *
 * @example
 * applyKnobs(builtin.raw(), { pods: 8, maxConnectionAgeMs: 30_000 })
 */
export function applyKnobs(raw: unknown, knobs: ScenarioKnobs): unknown {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return raw;
  const s = structuredClone(raw) as Obj;
  const k = knobs;
  if (k.trials !== undefined) s.trials = k.trials;
  if (k.bucketMs !== undefined) s.bucketMs = k.bucketMs;
  if (k.pods !== undefined) child(s, 'pods').count = k.pods;
  if (k.workers !== undefined) child(s, 'pods').workers = k.workers;
  if (k.readyDelayMs !== undefined) child(s, 'pods').readyDelayMs = k.readyDelayMs;
  if (k.serviceTimeMs !== undefined) child(s, 'pods').serviceTime = { type: 'exponential', meanMs: k.serviceTimeMs };
  const clients = child(s, 'clients');
  if (k.connections !== undefined) {
    clients.connections = k.connections;
    // Fewer connections than clients: shrink the client count too, unless it is set explicitly.
    if (k.clients === undefined && typeof clients.count === 'number' && clients.count > k.connections) {
      clients.count = k.connections;
    }
  }
  if (k.clients !== undefined) clients.count = k.clients;
  if (k.nodes !== undefined) clients.nodes = k.nodes;
  if (k.hashKey !== undefined) clients.hashKey = k.hashKey;
  if (k.balancerScope !== undefined) clients.balancerScope = k.balancerScope;
  if (k.balancers !== undefined) clients.balancers = k.balancers;
  if (k.discoverySpreadMs !== undefined) {
    if (k.discoverySpreadMs === 0) delete clients.discoveryLag;
    else clients.discoveryLag = { type: 'uniform', minMs: 0, maxMs: k.discoverySpreadMs };
  }
  if (k.slowStartMs !== undefined) clients.slowStartMs = k.slowStartMs;
  if (k.herdingGuard !== undefined) clients.herdingGuard = k.herdingGuard;
  if (k.podZones !== undefined) child(s, 'pods').zones = [...k.podZones];
  if (k.clientZones !== undefined) clients.zones = [...k.clientZones];
  if (k.zoneRouting !== undefined) clients.zoneRouting = k.zoneRouting;
  if (k.ratePerSecond !== undefined || k.requestsPerClient !== undefined) {
    const arrival = child(clients, 'arrival');
    if (arrival.type === undefined) arrival.type = 'poisson';
    if (k.ratePerSecond !== undefined) {
      if (arrival.type === 'closed-loop') throw notApplicable('--rate', 'the scenario uses closed-loop arrivals');
      arrival.ratePerSecond = k.ratePerSecond;
    }
    if (k.requestsPerClient !== undefined) arrival.count = k.requestsPerClient;
  }
  if (k.maxConnectionAgeMs !== undefined) child(clients, 'lifetime').maxConnectionAgeMs = k.maxConnectionAgeMs;
  if (k.ageJitter !== undefined) child(clients, 'lifetime').ageJitter = k.ageJitter;
  if (k.maxRequestsPerConnection !== undefined) {
    child(clients, 'lifetime').maxRequestsPerConnection = k.maxRequestsPerConnection;
  }
  if (k.serverMaxConnectionAgeMs !== undefined) {
    child(child(s, 'server'), 'lifetime').maxConnectionAgeMs = k.serverMaxConnectionAgeMs;
  }
  if (k.serverMaxRequestsPerConnection !== undefined) {
    child(child(s, 'server'), 'lifetime').maxRequestsPerConnection = k.serverMaxRequestsPerConnection;
  }
  if (k.serverFairShareTolerance !== undefined) {
    child(child(s, 'server'), 'fairShare').tolerance = k.serverFairShareTolerance;
  }
  if (k.windowMs !== undefined) child(s, 'measure').windowMs = k.windowMs;
  const events = Array.isArray(s.events) ? (s.events as Obj[]) : [];
  const ofType = (type: string) => events.filter((e) => e !== null && typeof e === 'object' && e.type === type);
  if (k.maxSurge !== undefined || k.maxUnavailable !== undefined) {
    const rollouts = ofType('rolling-update');
    if (rollouts.length === 0) {
      throw notApplicable(
        k.maxSurge !== undefined ? '--max-surge' : '--max-unavailable',
        'the scenario has no rolling update',
      );
    }
    for (const e of rollouts) {
      if (k.maxSurge !== undefined) e.maxSurge = k.maxSurge;
      if (k.maxUnavailable !== undefined) e.maxUnavailable = k.maxUnavailable;
    }
  }
  if (k.scaleTo !== undefined) {
    const scales = ofType('scale');
    if (scales.length === 0) throw notApplicable('--scale-to', 'the scenario has no scale event');
    for (const e of scales) e.pods = k.scaleTo;
  }
  return s;
}
