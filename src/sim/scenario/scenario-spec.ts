/**
 * The scenario schema: what a simulation runs — pods, clients and their connections, the
 * request workload, connection lifetimes on both sides, the timeline of changes (scale-outs,
 * rolling updates, bursts) and the measurement window. Built-in scenarios and
 * `--scenario-file` YAML go through the same `parseScenario()`, so a file is validated
 * exactly like a built-in and every error names the field (`scenario "x": option
 * "events[0].maxSurge" must be ...`).
 */

import { fairShareDecisionSpec } from '../../balancing/fair-share/fair-share-options.js';
import { describeValue, ErrorCodes, EvenlbError } from '../../core/errors.js';
import { opt, optionError, type Parsed, parseOptions } from '../../core/options.js';
import { lifetimeOptionsSpec } from '../../pool/lifetime-policy.js';
import { createSampler, type DistributionSpec, distributionField } from '../workload/distribution.js';
import { speedDistributionField } from '../workload/speed-distribution.js';
import { intOrPercent, listOf, numberOrKeyword, type VariantOf, variant } from './spec-fields.js';

const arrivalSpecs = {
  /** Open loop: each client sends requests as a Poisson process. */
  poisson: {
    type: opt.oneOf(['poisson']),
    ratePerSecond: opt.number({ min: 0, exclusiveMin: true }),
    /** Requests each client sends in all; unset = until the run ends. */
    count: opt.int({ min: 1, optional: true }),
  },
  /** Open loop: evenly spaced requests with a random phase per client. */
  periodic: {
    type: opt.oneOf(['periodic']),
    ratePerSecond: opt.number({ min: 0, exclusiveMin: true }),
    count: opt.int({ min: 1, optional: true }),
  },
  /** Closed loop: each client keeps `concurrency` requests outstanding, with a think time between. */
  'closed-loop': {
    type: opt.oneOf(['closed-loop']),
    concurrency: opt.int({ min: 1, default: 1 }),
    thinkTime: distributionField({ default: { type: 'fixed', valueMs: 0 } }),
    count: opt.int({ min: 1, optional: true }),
  },
};

export type ArrivalSpec = VariantOf<typeof arrivalSpecs>;

const eventSpecs = {
  /** Scale the Deployment to `pods` replicas (an HPA decision). */
  scale: { type: opt.oneOf(['scale']), atMs: opt.number({ min: 0 }), pods: opt.int({ min: 1 }) },
  /** Replace every pod with a new revision, as the Deployment controller does. */
  'rolling-update': {
    type: opt.oneOf(['rolling-update']),
    atMs: opt.number({ min: 0 }),
    maxSurge: intOrPercent({ default: '25%' }),
    maxUnavailable: intOrPercent({ default: '25%' }),
  },
  /** Every client sends `requestsPerClient` extra requests spread over `spreadMs` (admission bursts). */
  burst: {
    type: opt.oneOf(['burst']),
    atMs: opt.number({ min: 0 }),
    requestsPerClient: opt.int({ min: 1 }),
    spreadMs: opt.number({ min: 0, default: 100 }),
    /** Repeat every this many ms; unset = once. */
    everyMs: opt.number({ min: 0, exclusiveMin: true, optional: true }),
    /** How many bursts in all when repeating; unset = until the run ends. */
    repeat: opt.int({ min: 1, optional: true }),
  },
  /**
   * A noisy-neighbour episode on one pod: from `atMs`, for `durationMs`, it serves `factor`
   * times slower (its requests in service and queued included).
   */
  slowdown: {
    type: opt.oneOf(['slowdown']),
    atMs: opt.number({ min: 0 }),
    durationMs: opt.number({ min: 0, exclusiveMin: true }),
    /** Index of one of the initial pods, in creation order (0 = the first, `v1-01`). */
    pod: opt.int({ min: 0 }),
    /** Service takes this many times as long (3 = a third of the pod's speed). */
    factor: opt.number({ min: 1 }),
  },
};

export type ScenarioEvent = VariantOf<typeof eventSpecs>;

/** A scale-out or rolling update: a change the Deployment makes, which the run waits to settle. */
export function isDeploymentChange(
  e: ScenarioEvent,
): e is Extract<ScenarioEvent, { type: 'scale' | 'rolling-update' }> {
  return e.type === 'scale' || e.type === 'rolling-update';
}

/** GC-like pauses on every pod: it runs for `interval`, stops serving for `duration`, and again. */
const pausesSpec = {
  /** From the pod's creation or the end of its last pause to the start of the next. */
  interval: distributionField(),
  /** How long a pause lasts: nothing in service progresses, queued requests wait. */
  duration: distributionField(),
};

/** Noisy neighbours drawn on every pod: it runs normally for `interval`, then `factor`× slower for `duration`. */
const noisyNeighboursSpec = {
  /** From the pod's creation or the end of its last episode to the start of the next. */
  interval: distributionField(),
  /** How long an episode lasts. */
  duration: distributionField(),
  /** Service takes this many times as long during an episode. */
  factor: opt.number({ min: 1 }),
};

const podsSpec = {
  /** Replicas at the start. */
  count: opt.int({ min: 1, max: 100_000 }),
  /** Requests a pod serves concurrently; more wait in its FIFO queue. */
  workers: opt.int({ min: 1, default: 8 }),
  /** Service time of one request on a pod of speed 1. */
  serviceTime: distributionField({ default: { type: 'exponential', meanMs: 5 } }),
  /** Speed multipliers (capacity factors), cycled over pods in creation order (0.5 = half as fast). */
  speeds: listOf(opt.number({ min: 0, exclusiveMin: true })),
  /** Speeds drawn per pod as it is created, instead of `speeds` (a fleet on mixed machines). */
  speedDistribution: speedDistributionField(),
  /** GC-like pauses on every pod, at seeded random intervals; unset = none. */
  pauses: opt.object(pausesSpec, { optional: true }),
  /** Noisy-neighbour episodes drawn on every pod, at seeded random intervals; unset = none. */
  noisyNeighbours: opt.object(noisyNeighboursSpec, { optional: true }),
  /** From pod creation to Ready, in ms. */
  readyDelayMs: opt.number({ min: 0, default: 2000 }),
  /** Service port of every pod. */
  port: opt.int({ min: 1, max: 65535, default: 8443 }),
  /**
   * Pods per zone at the start (`[4, 4, 3]`: zones a, b, c), summing to `count`; pods added
   * later go to the zone with the fewest. Empty = no zones.
   */
  zones: listOf(opt.int({ min: 0 })),
};

const clientsSpec = {
  /** Client processes (each with its own dataplane state: pool, balancer, node). Default: one per connection. */
  count: opt.int({ min: 1, max: 1_000_000, optional: true }),
  /** Long-lived connections in all, spread over the clients as evenly as possible. */
  connections: opt.int({ min: 1, max: 10_000_000 }),
  /** Nodes the clients run on (round-robin); IPVS keeps scheduler state per node. */
  nodes: opt.int({ min: 1, max: 128, default: 3 }),
  arrival: variant(arrivalSpecs, { default: { type: 'poisson', ratePerSecond: 100 } }),
  /** The client closes a connection after a lifetime drawn from this (sessions); unset = never. */
  connectionLifetime: distributionField({ optional: true }),
  /** Client-side lifetime limits (LifetimePolicy): reconnect after N requests or an age. */
  lifetime: opt.object(lifetimeOptionsSpec),
  /** Spread the initial connections' ages uniformly over their limit (a cluster in steady state). */
  staggerAges: opt.boolean({ default: true }),
  /** Delay before a closed connection is replaced. */
  reconnectDelay: distributionField({ default: { type: 'fixed', valueMs: 0 } }),
  /** Hash policies' request key: the client's address (affinity) or a random key per request. */
  hashKey: opt.oneOf(['request', 'client'], { default: 'request' }),
  /** apiserver models: idle connections kept per host (Go's MaxIdleConnsPerHost; the apiserver sets 25). */
  maxIdleConnsPerHost: opt.int({ min: 0, default: 25 }),
  /** evenlb: one Balancer per client (BalancedAgent) or one shared by all (a proxy replica). */
  balancerScope: opt.oneOf(['client', 'shared'], { default: 'client' }),
  /**
   * evenlb: M independent balancers (client or proxy replicas), each with its own `Balancer`
   * and load view; client i sends through balancer i mod M. Unset: `balancerScope` decides.
   */
  balancers: opt.int({ min: 1, max: 1_000_000, optional: true }),
  /**
   * evenlb: how late each balancer learns of each endpoint change (a watch delay, a DNS TTL, a
   * file sync), drawn per balancer and change; unset = at once.
   */
  discoveryLag: distributionField({ optional: true }),
  /** Relative number of clients per zone (`[50, 30, 20]`), one entry per pod zone. Empty = even. */
  zones: listOf(opt.number({ min: 0 })),
  /** evenlb: slow-start window for newly ready pods, ms; 0 = off. */
  slowStartMs: opt.number({ min: 0, default: 0 }),
  /** evenlb: the herding guard of least-request / peak-ewma (on by default, as in the library). */
  herdingGuard: opt.boolean({ default: true }),
  /** evenlb: load-aware zone routing for clients with a zone; default off. */
  zoneRouting: opt.oneOf(['off', 'on'], { default: 'off' }),
  /** evenlb: zone routing's load band (fraction over the fleet before spilling); default the library's. */
  zoneLoadBand: opt.number({ min: 0, exclusiveMin: true, optional: true }),
};

const serverSpec = {
  /** Server-side recycling (the connection recycler): close after N requests or an age. */
  lifetime: opt.object(lifetimeOptionsSpec),
  /** After a pod is removed from endpoints, ms until it closes its connections (graceful drain). */
  terminationDrainMs: opt.number({ min: 0, default: 0 }),
  /** Fair-share shedding (the recycler's `fairShare`): shed only above the fleet mean × (1 + tolerance). */
  fairShare: opt.object(fairShareDecisionSpec, { optional: true }),
  /**
   * What a pod reports of itself is recent over this many ms: its utilization and request rate
   * over the trailing window (what load reports read).
   */
  loadWindowMs: opt.number({ min: 0, exclusiveMin: true, default: 1000 }),
};

const measureSpec = {
  /**
   * Where the measured window starts: `start` (0), `settled` (once the last scale-out or
   * rolling update has finished) or a time in ms.
   */
  from: numberOrKeyword(['start', 'settled'], { min: 0, default: 'start' }),
  /** Window length in ms; unset = until every request has been served (finite arrivals only). */
  windowMs: opt.number({ min: 0, exclusiveMin: true, optional: true }),
};

export const scenarioSpec = {
  name: opt.string({ nonEmpty: true }),
  description: opt.string({ default: '' }),
  /** Independent repetitions with different seeds; figures are averaged over them. */
  trials: opt.int({ min: 1, max: 1_000_000, default: 1 }),
  /** Width of the per-pod load-over-time buckets, ms. */
  bucketMs: opt.number({ min: 0, exclusiveMin: true, default: 1000 }),
  pods: opt.object(podsSpec),
  clients: opt.object(clientsSpec),
  server: opt.object(serverSpec),
  events: listOf(variant(eventSpecs)),
  measure: opt.object(measureSpec),
  /** Dataplanes to compare by default (names as in `--dataplanes`); unset = all. */
  dataplanes: listOf(opt.string({ nonEmpty: true }), { optional: true }),
};

/** A validated scenario. */
export type Scenario = Parsed<typeof scenarioSpec>;

function fail(component: string, path: string, expected: string, received: unknown): never {
  throw optionError(component, path, expected, received);
}

function checkDistribution(d: DistributionSpec | undefined, path: string, component: string): void {
  if (d?.type === 'uniform' && d.maxMs < d.minMs) fail(component, `${path}.maxMs`, `>= minMs (${d.minMs})`, d.maxMs);
}

/** Capacity factors, pauses, noisy neighbours and slowdown events: consistent and able to progress. */
function checkPodDynamics(s: Scenario, component: string): void {
  const p = s.pods;
  if (p.speedDistribution !== undefined && (p.speeds ?? []).length > 0) {
    fail(component, 'pods.speedDistribution', 'unset when pods.speeds is set (one or the other)', p.speedDistribution);
  }
  const d = p.speedDistribution;
  if (d?.type === 'uniform' && d.max < d.min) fail(component, 'pods.speedDistribution.max', `>= min (${d.min})`, d.max);
  for (const [name, episodes] of [
    ['pods.pauses', p.pauses],
    ['pods.noisyNeighbours', p.noisyNeighbours],
  ] as const) {
    if (episodes === undefined) continue;
    checkDistribution(episodes.interval, `${name}.interval`, component);
    checkDistribution(episodes.duration, `${name}.duration`, component);
    // A pod must run between episodes, or the timeline would never advance.
    if (createSampler(episodes.interval).meanMs <= 0) {
      fail(component, `${name}.interval`, 'a distribution with a mean > 0', episodes.interval);
    }
  }
  (s.events ?? []).forEach((e, i) => {
    if (e.type === 'slowdown' && e.pod >= p.count) {
      fail(component, `events[${i}].pod`, `the index of an initial pod (< pods.count, ${p.count})`, e.pod);
    }
  });
}

/**
 * Validates a raw scenario object (from YAML or a built-in); returns it frozen and typed.
 * `source` names it in errors (a file name or a built-in name).
 *
 * @example
 * parseScenario({ name: 'x', pods: { count: 4 }, clients: { connections: 8 } }, 'x')
 */
export function parseScenario(raw: unknown, source: string): Scenario {
  const component = `scenario ${source}`;
  const s = parseOptions(component, raw, scenarioSpec);
  checkDistribution(s.pods.serviceTime, 'pods.serviceTime', component);
  checkDistribution(s.clients.connectionLifetime, 'clients.connectionLifetime', component);
  checkDistribution(s.clients.reconnectDelay, 'clients.reconnectDelay', component);
  if (s.clients.arrival.type === 'closed-loop') {
    checkDistribution(s.clients.arrival.thinkTime, 'clients.arrival.thinkTime', component);
  }
  const clientCount = s.clients.count ?? s.clients.connections;
  if (clientCount > s.clients.connections) {
    fail(component, 'clients.count', `<= clients.connections (${s.clients.connections})`, clientCount);
  }
  if (Math.ceil(clientCount / s.clients.nodes) > 65_000) {
    fail(component, 'clients.count', `at most 65000 per node (${s.clients.nodes} nodes)`, clientCount);
  }
  checkDistribution(s.clients.discoveryLag, 'clients.discoveryLag', component);
  checkPodDynamics(s, component);
  const podZones = s.pods.zones ?? [];
  if (podZones.length > 0 && podZones.reduce((a, b) => a + b, 0) !== s.pods.count) {
    fail(component, 'pods.zones', `pods per zone summing to pods.count (${s.pods.count})`, podZones);
  }
  const clientZones = s.clients.zones ?? [];
  if (clientZones.length > 0 && clientZones.length !== podZones.length) {
    fail(component, 'clients.zones', `one weight per pod zone (${podZones.length})`, clientZones);
  }
  if (clientZones.length > 0 && !clientZones.some((w) => w > 0)) {
    fail(component, 'clients.zones', 'at least one weight > 0', clientZones);
  }
  // As Kubernetes validates a Deployment: maxSurge and maxUnavailable may not both be 0 (or 0%).
  const isZero = (v: number | string) => v === 0 || (typeof v === 'string' && Number.parseFloat(v) === 0);
  (s.events ?? []).forEach((e, i) => {
    if (e.type === 'rolling-update' && isZero(e.maxSurge) && isZero(e.maxUnavailable)) {
      fail(
        component,
        `events[${i}].maxUnavailable`,
        'not 0 when maxSurge is 0 (the rollout could never progress)',
        e.maxUnavailable,
      );
    }
  });
  const finite = s.clients.arrival.count !== undefined;
  const repeatingBurst = (s.events ?? []).some(
    (e) => e.type === 'burst' && e.everyMs !== undefined && e.repeat === undefined,
  );
  if (s.measure.windowMs === undefined && (!finite || repeatingBurst)) {
    fail(
      component,
      'measure.windowMs',
      'set when arrivals never stop (no clients.arrival.count, or a burst repeating forever)',
      undefined,
    );
  }
  return s;
}

/**
 * Resolves a maxSurge / maxUnavailable value against the replica count, as the Deployment
 * controller does: percentages round up for maxSurge and down for maxUnavailable.
 *
 * @example
 * resolveIntOrPercent('25%', 10, true) // 3
 * resolveIntOrPercent('25%', 10, false) // 2
 */
export function resolveIntOrPercent(value: number | string, replicas: number, roundUp: boolean): number {
  if (typeof value === 'number') return value;
  const pct = Number.parseFloat(value.slice(0, -1));
  const exact = (pct * replicas) / 100;
  return roundUp ? Math.ceil(exact - 1e-9) : Math.floor(exact + 1e-9);
}

/** An error for a scenario that is valid field by field but cannot run. */
export function scenarioError(source: string, message: string, value?: unknown): EvenlbError {
  return new EvenlbError(
    ErrorCodes.INVALID_CONFIG,
    `scenario ${source}: ${message}${value === undefined ? '' : `; received ${describeValue(value)}`}`,
    { details: { scenario: source } },
  );
}
