/**
 * The built-in scenarios, as raw scenario objects — the same shape a `--scenario-file` YAML
 * has, and validated by the same parser. Each reproduces one way a Service's load goes
 * uneven (or one check against a closed form), with defaults small enough to run in about a
 * second and large enough that per-request noise stays well under the effects shown.
 */
import { applyKnobs, type ScenarioKnobs } from './scenario-knobs.js';
import { parseScenario, type Scenario, type ScenarioEvent } from './scenario-spec.js';
import {
  arrivalText,
  busyText,
  clientCount,
  distributionText,
  durationText,
  plural,
  podName,
  podsText,
} from './scenario-text.js';

export interface BuiltinScenario {
  readonly name: string;
  readonly summary: string;
  /** A fresh raw (unvalidated) scenario object; callers may patch it before parsing. */
  readonly raw: () => Record<string, unknown>;
  /** What the scenario simulates, in words, from the final (validated, knobs applied) spec. */
  readonly describe: (s: Scenario) => string;
}

function eventOf<T extends ScenarioEvent['type']>(
  s: Scenario,
  type: T,
): Extract<ScenarioEvent, { type: T }> | undefined {
  return (s.events ?? []).find((e) => e.type === type) as Extract<ScenarioEvent, { type: T }> | undefined;
}

const evenlbAndApiserver = ['apiserver-legacy', 'apiserver-roundtrip', 'evenlb:*'];

/** `heterogeneous`: pod speeds (one at half speed), workers, mean service time, clients and load. */
const UNEQUAL_SPEEDS = [1, 1, 1, 1, 1, 1, 1, 0.5];
const UNEQUAL_WORKERS = 4;
const UNEQUAL_SERVICE_MS = 10;
const UNEQUAL_CLIENTS = 50;
const UNEQUAL_LOAD = 0.8;

/** Each client's rate for `load` × the capacity of pods of `speeds` (Σ speed × workers / service time). */
function ratePerClient(load: number, speeds: readonly number[], workers: number, serviceMs: number, clients: number) {
  const capacity = (speeds.reduce((a, b) => a + b, 0) * workers * 1000) / serviceMs;
  return (load * capacity) / clients;
}

export const builtinScenarios: readonly BuiltinScenario[] = [
  {
    name: 'steady',
    summary: 'long-lived connections that never reconnect: the skew their placement leaves',
    describe: (s) =>
      `${plural(clientCount(s), 'client')} hold ${plural(s.clients.connections, 'long-lived connection')} to ${podsText(s)} (${busyText(s)} busy on average) and send ${arrivalText(s)}; nothing changes.`,
    raw: () => ({
      name: 'steady',
      pods: { count: 4, workers: 1 },
      clients: { count: 8, connections: 16, arrival: { type: 'poisson', ratePerSecond: 50 } },
      measure: { from: 'start', windowMs: 300_000 },
    }),
  },
  {
    name: 'rolling-update',
    summary: 'a rolling update (maxSurge, maxUnavailable): reconnects pile onto the first new pods',
    describe: (s) => {
      const e = eventOf(s, 'rolling-update');
      const how =
        e === undefined
          ? ''
          : ` (maxSurge ${e.maxSurge}, maxUnavailable ${e.maxUnavailable}, from ${durationText(e.atMs)})`;
      return `Each of ${podsText(s)} is replaced one step at a time${how}; ${plural(clientCount(s), 'client')} hold ${plural(s.clients.connections, 'connection')}, and connections to a removed pod reconnect over the pods ready at that moment. Measured after the rollout.`;
    },
    raw: () => ({
      name: 'rolling-update',
      pods: { count: 4, workers: 2, readyDelayMs: 2000 },
      clients: { count: 100, connections: 2000, arrival: { type: 'poisson', ratePerSecond: 10 } },
      events: [{ type: 'rolling-update', atMs: 5000, maxSurge: 1, maxUnavailable: 0 }],
      measure: { from: 'settled', windowMs: 60_000 },
    }),
  },
  {
    name: 'hpa-scale-out',
    summary: 'an HPA scale-out K → K′: new pods get nothing until connections are re-dialled',
    describe: (s) => {
      const e = eventOf(s, 'scale');
      const to = e === undefined ? '' : ` to ${e.pods} at ${durationText(e.atMs)}`;
      return `The HPA scales ${podsText(s)} running at ${busyText(s)}${to}; ${plural(clientCount(s), 'client')} hold ${plural(s.clients.connections, 'connection')}, which stay where they are unless a lifetime limit (--max-age, --max-requests) re-dials them.`;
    },
    raw: () => ({
      name: 'hpa-scale-out',
      bucketMs: 5000,
      pods: { count: 4, workers: 1, serviceTime: { type: 'exponential', meanMs: 7.2 }, readyDelayMs: 2000 },
      clients: { count: 100, connections: 2000, arrival: { type: 'poisson', ratePerSecond: 5 } },
      events: [{ type: 'scale', atMs: 10_000, pods: 8 }],
      measure: { from: 'settled', windowMs: 240_000 },
    }),
  },
  {
    name: 'heterogeneous-durations',
    summary: 'connections of very different durations: dial-time balancing cannot see which ones stay',
    describe: (s) => {
      const life = s.clients.connectionLifetime;
      const sessions = life === undefined ? 'never end' : `last ${distributionText(life)}`;
      const from = typeof s.measure.from === 'number' ? ` after a ${durationText(s.measure.from)} warm-up` : '';
      return `${plural(clientCount(s), 'client')} hold ${plural(s.clients.connections, 'connection')} to ${podsText(s)}; sessions ${sessions} and are re-dialled as they end, so the load follows the few long-lived ones. rr and random spread dials, lc counts open connections on its own node only. Measured${from}, over ${plural(s.trials, 'trial')}.`;
    },
    raw: () => ({
      name: 'heterogeneous-durations',
      trials: 3,
      pods: { count: 4, workers: 4 },
      clients: {
        count: 50,
        connections: 50,
        arrival: { type: 'poisson', ratePerSecond: 10 },
        connectionLifetime: { type: 'lognormal', meanMs: 30_000, sigma: 2 },
      },
      measure: { from: 60_000, windowMs: 120_000 },
    }),
  },
  {
    name: 'webhook-burst',
    summary: 'admission bursts from 3 apiservers through the legacy and round-trip webhook clients',
    describe: (s) => {
      const e = eventOf(s, 'burst');
      const burst =
        e === undefined
          ? ''
          : ` plus a burst of ${e.requestsPerClient} requests each${e.everyMs === undefined ? '' : ` every ${durationText(e.everyMs)}`}`;
      return `${plural(clientCount(s), 'kube-apiserver')} call a ${s.pods.count}-replica admission webhook: a steady trickle (${arrivalText(s)})${burst}.`;
    },
    raw: () => ({
      name: 'webhook-burst',
      pods: { count: 3, workers: 16, serviceTime: { type: 'exponential', meanMs: 20 } },
      clients: { count: 3, connections: 3, arrival: { type: 'poisson', ratePerSecond: 50 } },
      events: [{ type: 'burst', atMs: 5000, requestsPerClient: 200, spreadMs: 200, everyMs: 10_000 }],
      measure: { from: 'start', windowMs: 120_000 },
      dataplanes: evenlbAndApiserver,
    }),
  },
  {
    name: 'random-connections',
    summary: 'C connections over K pods, many trials: the closed form of random placement',
    describe: (s) => {
      const a = s.clients.arrival;
      const each = a.count === undefined ? '' : `, ${plural(a.count, 'request')} each`;
      return `${plural(s.clients.connections, 'connection')} from ${plural(clientCount(s), 'client')} placed over ${plural(s.pods.count, 'pod')}${each}, ${plural(s.trials, 'trial')}. A per-connection dataplane gives each pod requests in proportion to its connections, so max/mean is that of the placement (it does not depend on the number of requests; so one request per connection is exact; per-request dataplanes need many requests per client to average out, e.g. --requests 1000).`;
    },
    raw: () => ({
      name: 'random-connections',
      trials: 20,
      pods: { count: 4 },
      // One request per connection: per-connection placement is all this scenario measures.
      clients: { connections: 8, arrival: { type: 'periodic', ratePerSecond: 2, count: 1 } },
      measure: { from: 'start' },
      dataplanes: ['iptables', 'nftables', 'ipvs-rr', 'ipvs-lc', 'ipvs-sh', 'apiserver-legacy'],
    }),
  },
  {
    name: 'fleet-scale-out',
    summary: 'many balancer replicas discover new pods at different moments: do they all pile onto them?',
    describe: (s) => {
      const e = eventOf(s, 'scale');
      const to = e === undefined ? '' : `; the Deployment scales to ${e.pods} at ${durationText(e.atMs)}`;
      const lag = s.clients.discoveryLag;
      const m = s.clients.balancers ?? (s.clients.balancerScope === 'shared' ? 1 : clientCount(s));
      return `${plural(m, 'balancer replica')} (each its own Balancer and load view) carry ${plural(clientCount(s), 'client')}' traffic to ${podsText(s)} running at ${busyText(s)}${to} and each replica learns of it after ${lag === undefined ? 'no delay' : distributionText(lag)}. Reported per second after the new pods are ready.`;
    },
    raw: () => ({
      name: 'fleet-scale-out',
      bucketMs: 1000,
      // Long calls (1 s: streaming responses, long polls): every replica has requests in flight
      // to every old pod, so a new pod's zero in-flight stands out in least-request's comparisons.
      pods: { count: 8, workers: 128, serviceTime: { type: 'exponential', meanMs: 1000 }, readyDelayMs: 2000 },
      clients: {
        count: 200,
        connections: 200,
        arrival: { type: 'poisson', ratePerSecond: 3.6 },
        balancers: 50,
        discoveryLag: { type: 'uniform', minMs: 0, maxMs: 2000 },
      },
      events: [{ type: 'scale', atMs: 10_000, pods: 12 }],
      measure: { from: 'settled', windowMs: 60_000 },
      dataplanes: ['iptables', 'evenlb:round-robin', 'evenlb:least-request', 'evenlb:peak-ewma'],
    }),
  },
  {
    name: 'heterogeneous',
    summary: 'unequal pods (one at half speed, one 3× slower for a minute) and 50 independent client balancers',
    describe: (s) => {
      const slow = eventOf(s, 'slowdown');
      const episode =
        slow === undefined
          ? ''
          : `, and ${podName(s, 1, slow.pod + 1)} serves ${slow.factor}× slower from ${durationText(slow.atMs)} for ${durationText(slow.durationMs)} (a noisy neighbour)`;
      const speeds = s.pods.speeds ?? [];
      const half = speeds.filter((v) => v !== 1).length;
      const unequal =
        half === 0 ? '' : ` of unequal speed (${speeds.join(', ')}${speeds.length < s.pods.count ? ', cycled' : ''})`;
      const m = s.clients.balancers ?? (s.clients.balancerScope === 'shared' ? 1 : clientCount(s));
      return `${plural(clientCount(s), 'client replica')} (${plural(m, 'independent balancer')}, each seeing only its own requests) send ${arrivalText(s)} to ${podsText(s)}${unequal}: ${busyText(s)} of the fleet's capacity${episode}. Even requests overload the slow pods; even utilization is the goal.`;
    },
    raw: () => ({
      name: 'heterogeneous',
      pods: {
        count: UNEQUAL_SPEEDS.length,
        workers: UNEQUAL_WORKERS,
        serviceTime: { type: 'exponential', meanMs: UNEQUAL_SERVICE_MS },
        speeds: UNEQUAL_SPEEDS,
      },
      clients: {
        count: UNEQUAL_CLIENTS,
        connections: UNEQUAL_CLIENTS,
        arrival: {
          type: 'poisson',
          ratePerSecond: ratePerClient(
            UNEQUAL_LOAD,
            UNEQUAL_SPEEDS,
            UNEQUAL_WORKERS,
            UNEQUAL_SERVICE_MS,
            UNEQUAL_CLIENTS,
          ),
        },
      },
      events: [{ type: 'slowdown', atMs: 40_000, durationMs: 60_000, pod: 3, factor: 3 }],
      measure: { from: 10_000, windowMs: 120_000 },
      // Every evenlb policy, so policies registered later join the comparison.
      dataplanes: ['iptables', 'evenlb:*'],
    }),
  },
  {
    name: 'zone-skew',
    summary: 'pods spread 4-4-3 over three zones, clients 50/30/20: who serves whom, and across zones',
    describe: (s) => {
      const pods = (s.pods.zones ?? []).join('-');
      const weights = s.clients.zones ?? [];
      const total = weights.reduce((a, b) => a + b, 0);
      const clients = weights.map((w) => `${Math.round((w / total) * 100)}%`).join('/');
      return `${podsText(s)} spread ${pods} over ${plural((s.pods.zones ?? []).length, 'zone')}; ${plural(clientCount(s), 'client')} (${clients} per zone) hold ${plural(s.clients.connections, 'connection')} and send ${arrivalText(s)}; pods ${busyText(s)} busy on average. Zone-unaware dataplanes spread evenly over pods and send most requests across zones.`;
    },
    raw: () => ({
      name: 'zone-skew',
      pods: { count: 11, workers: 4, zones: [4, 4, 3], serviceTime: { type: 'exponential', meanMs: 10 } },
      clients: {
        count: 100,
        connections: 400,
        arrival: { type: 'poisson', ratePerSecond: 20 },
        zones: [50, 30, 20],
      },
      measure: { from: 'start', windowMs: 60_000 },
    }),
  },
];

/** The built-in scenario `name`, or undefined. */
export function findBuiltinScenario(name: string): BuiltinScenario | undefined {
  return builtinScenarios.find((s) => s.name === name);
}

/**
 * The built-in scenario `builtin` with `knobs` applied, validated, and described from the
 * final spec (so `--pods 1000` is reported as 1,000 pods). `source` names it in errors.
 *
 * @example
 * parseBuiltinScenario(findBuiltinScenario('steady')!, { pods: 1000 }).description
 */
export function parseBuiltinScenario(
  builtin: BuiltinScenario,
  knobs: ScenarioKnobs = {},
  source = builtin.name,
): Scenario {
  const s = parseScenario(applyKnobs(builtin.raw(), knobs), source);
  return Object.freeze({ ...s, description: builtin.describe(s) });
}
