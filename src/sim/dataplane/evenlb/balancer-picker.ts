/**
 * evenlb in the simulator: the production `Balancer` with a registered policy, on the virtual
 * clock, fed the same signals as in a real client — `EndpointLoad.start()` when a request is
 * sent and `end()` when its response arrives, so in-flight counts and the peak-EWMA latency
 * follow the simulated pods. Slow start, the herding guard and zone routing come from the
 * scenario's `clients`, as a client's cluster settings would give them.
 *
 * A fleet of M balancers: one per client (each process runs its own BalancedAgent), one shared
 * by all (a proxy replica), or `clients.balancers` = M replicas with client i behind replica
 * i mod M. Each has its own load view, and with `clients.discoveryLag` each learns of every
 * endpoint change after its own delay (see `DiscoveryLag`), so replicas act on different
 * endpoint sets for a while — a request picked from a stale set may reach a pod already gone
 * (it fails, as a refused connection would). Zone routing knows a balancer's zone only when
 * it serves one client (one balancer per client): a replica serving clients of several zones
 * routes without a zone. The pick context is reused per client, so a pick allocates nothing.
 *
 * What pods say of their load reaches the balancers as it would from evenlb servers, for
 * policies that read it (`BalancingPolicy.loadSignals`): every response carries a load report
 * read from the pod's own figures (`SimPod`: recent utilization and requests per second, in
 * flight, and the latency a request arriving now may expect as `named_metrics.latency_ms`, fed
 * to `report()` as the response ends), and a `SimLoadProber` answers probes on virtual time. A pod that rejects a
 * request (`rejected`) counts as pushback for every policy. `counters()` says how many of each.
 *
 * Per request the work stays in typed arrays: the picked record's index maps to its pod
 * through a per-balancer table (filled on first use, cleared whenever the balancer publishes a
 * new picker, as only then can an index change hands), and the request ends through the
 * balancer's `LoadTracker` by index.
 */
import { Balancer } from '../../../balancing/balancer.js';
import type { LoadTracker } from '../../../balancing/endpoint-load.js';
import type { LoadReport } from '../../../balancing/load-report.js';
import type { PickContext } from '../../../balancing/picker.js';
import { getPolicy } from '../../../balancing/policy.js';
import { ErrorCodes, EvenlbError } from '../../../core/errors.js';
import type { SimClient } from '../../model/sim-client.js';
import type { SimPod } from '../../model/sim-pod.js';
import type { SimulationContext } from '../../model/simulation-context.js';
import { zoneName } from '../../model/zones.js';
import type { Scenario } from '../../scenario/scenario-spec.js';
import { clientCount } from '../../scenario/scenario-text.js';
import type { DataplaneCounters } from '../dataplane.js';
import type { RequestPicker } from '../per-request-router.js';
import { DiscoveryLag } from './discovery-lag.js';
import { SimLoadProber } from './sim-load-prober.js';

type MutableReport = { -readonly [K in keyof LoadReport]: LoadReport[K] };

/** How many balancers a scenario runs, and which one serves client `i` (`i % count`). */
export function balancerCount(ctx: SimulationContext, kind: 'load' | 'hash'): number {
  return scenarioBalancers(ctx.scenario, ctx.clients.length, kind);
}

function scenarioBalancers(s: Scenario, clients: number, kind: 'load' | 'hash'): number {
  const c = s.clients;
  if (c.balancers !== undefined) return Math.min(c.balancers, clients);
  // A hash policy's pick depends only on the request key and the endpoint set (it reads no
  // load signal and draws no random number when given a key), so every client's balancer
  // would build the same table: one shared balancer picks identically at 1/N of the cost.
  return c.balancerScope === 'shared' || kind === 'hash' ? 1 : clients;
}

/**
 * The most load records (balancers × pods) a simulation may keep. Every balancer holds one
 * record per endpoint with its picker entries, a few hundred bytes in all: 4 × 10^6 is about
 * 1.5 GB, the most that fits the default heap beside the rest of a large run.
 */
export const MAX_LOAD_RECORDS = 4_000_000;

/**
 * Throws an `EVENLB_INVALID_OPTION` error, before anything runs, when the scenario's evenlb
 * balancers would keep more than `MAX_LOAD_RECORDS` load records: each balancer tracks every
 * pod, so 10,000 per-client balancers over 10,000 pods are 10^8 records — a run that would
 * exhaust the heap after minutes. The message names the product and both ways out.
 */
export function checkLoadRecords(s: Scenario, dataplane: string, kind: 'load' | 'hash'): void {
  const clients = clientCount(s);
  const balancers = scenarioBalancers(s, clients, kind);
  let pods = s.pods.count;
  for (const e of s.events ?? []) if (e.type === 'scale') pods = Math.max(pods, e.pods);
  const records = balancers * pods;
  if (records <= MAX_LOAD_RECORDS) return;
  const n = (x: number): string => x.toLocaleString('en-US');
  const scope =
    s.clients.balancers === undefined ? ` (balancer scope "${s.clients.balancerScope}": one per client)` : '';
  throw new EvenlbError(
    ErrorCodes.INVALID_OPTION,
    `${dataplane}: ${n(balancers)} balancers${scope} × ${n(pods)} pods = ${n(records)} load records, ` +
      `more than the simulator's limit of ${n(MAX_LOAD_RECORDS)} (each balancer tracks every pod); ` +
      `use --balancers M with M × ${n(pods)} <= ${n(MAX_LOAD_RECORDS)} (M = ${n(Math.max(1, Math.floor(MAX_LOAD_RECORDS / pods)))} at most: ` +
      'independent replicas, each its own view) or --balancer-scope shared (one balancer for all clients)',
    { details: { field: 'clients.balancers', expected: `balancers × pods <= ${MAX_LOAD_RECORDS}` } },
  );
}

export class BalancerPicker implements RequestPicker {
  readonly #ctx: SimulationContext;
  readonly #balancers: Balancer[] = [];
  readonly #trackers: LoadTracker[] = [];
  /** Per balancer: pod index + 1 by load-record index; 0 = not looked up since the last picker. */
  readonly #podByRecord: Int32Array[] = [];
  readonly #pickContexts: PickContext[];
  readonly #lag: DiscoveryLag | undefined;
  /** Draw a fresh random key per request (hash policies keyed by request); load policies ignore keys. */
  readonly #requestKeys: boolean;
  /** One report object, rewritten for each response (the reader copies what it keeps). */
  readonly #report: MutableReport = { applicationUtilization: 0, rpsFractional: 0, eps: 0 };
  readonly #named: Record<string, number> = { inflight: 0, latency_ms: 0 };
  readonly #reports: boolean;
  readonly #prober: SimLoadProber | undefined;
  #loadReports = 0;
  #pushbacks = 0;

  constructor(ctx: SimulationContext, policy: string, kind: 'load' | 'hash') {
    this.#ctx = ctx;
    const reads = getPolicy(policy).loadSignals ?? [];
    this.#reports = reads.includes('reports');
    this.#report.namedMetrics = this.#named;
    this.#prober = reads.includes('probes') ? new SimLoadProber(ctx) : undefined;
    this.#requestKeys = kind === 'hash' && ctx.scenario.clients.hashKey === 'request';
    const count = balancerCount(ctx, kind);
    const c = ctx.scenario.clients;
    const perClient = count === ctx.clients.length;
    for (let i = 0; i < count; i++) {
      const clientZone = perClient ? (ctx.clients[i] as SimClient).zone : -1;
      const zone = clientZone < 0 ? undefined : zoneName(clientZone);
      this.#balancers.push(
        new Balancer({
          policy,
          clock: ctx.clock,
          random: ctx.streams.balancers.fork(),
          slowStart: { windowMs: c.slowStartMs },
          ...(c.herdingGuard ? {} : { herdingGuard: false as const }),
          zoneRouting: {
            mode: c.zoneRouting,
            ...(zone === undefined ? {} : { zone }),
            ...(c.zoneLoadBand === undefined ? {} : { loadBand: c.zoneLoadBand }),
          },
          ...(this.#prober === undefined ? {} : { prober: this.#prober }),
        }),
      );
    }
    for (const [i, b] of this.#balancers.entries()) {
      this.#trackers.push(b.loads);
      this.#podByRecord.push(new Int32Array(0));
      b.onPicker((picker) => {
        const table = this.#podByRecord[i] as Int32Array;
        const size = picker.endpoints.reduce((max, t) => Math.max(max, t.load.index + 1), 0);
        if (table.length < size) this.#podByRecord[i] = new Int32Array(Math.max(size, 2 * table.length));
        else table.fill(0);
      });
    }
    this.#pickContexts = ctx.clients.map((c) => ({ hash: c.addressHash }));
    const lag = ctx.scenario.clients.discoveryLag;
    this.#lag = lag === undefined ? undefined : new DiscoveryLag(ctx, this.#balancers, lag);
  }

  update(): void {
    const set = this.#ctx.endpointSet();
    if (this.#lag !== undefined) this.#lag.publish(set);
    else for (const b of this.#balancers) b.update(set);
  }

  pick(client: SimClient, slot: number): SimPod | undefined {
    const balancers = this.#balancers;
    const b = balancers.length === 1 ? 0 : client.index % balancers.length;
    const context = this.#pickContexts[client.index] as PickContext;
    if (this.#requestKeys) context.hash = (this.#ctx.streams.requestKeys.next() * 4294967296) >>> 0;
    const picked = (balancers[b] as Balancer).picker.pick(context);
    if (picked.type === 'none') return undefined;
    const index = picked.load.index;
    const table = this.#podByRecord[b] as Int32Array;
    let pod: SimPod | undefined;
    const known = table[index] as number;
    if (known > 0) {
      pod = this.#ctx.pods[known - 1];
    } else {
      pod = this.#ctx.podOf(picked.endpoint);
      if (pod !== undefined) table[index] = pod.index + 1;
    }
    // Only a stale view can hold a pod that is gone: the dial is refused.
    if (pod === undefined || pod.state === 'gone') return undefined;
    const requests = this.#ctx.requests;
    requests.loadOwner[slot] = b;
    requests.loadIndex[slot] = index;
    requests.loadStartMs[slot] = (this.#trackers[b] as LoadTracker).startAt(index);
    return pod;
  }

  done(slot: number): void {
    const requests = this.#ctx.requests;
    const b = requests.loadOwner[slot] as number;
    if (this.#reports && b >= 0) {
      // The response carries the pod's report; the balancer reads it as the response ends.
      const now = this.#ctx.scheduler.now;
      const pod = this.#ctx.pods[requests.pod[slot] as number] as SimPod;
      (this.#trackers[b] as LoadTracker).reported.report(requests.loadIndex[slot] as number, this.#fill(pod, now), now);
      this.#loadReports++;
    }
    this.#end(slot, true);
  }

  /** The report `pod` attaches to a response now, from its own figures. Valid until the next call. */
  #fill(pod: SimPod, nowMs: number): LoadReport {
    const r = this.#report;
    r.applicationUtilization = pod.recentUtilization(nowMs);
    r.rpsFractional = pod.recentRequestsPerSecond(nowMs);
    this.#named.inflight = pod.inFlight;
    // NaN before the pod's first response: the latency is unknown (a real server leaves it out).
    this.#named.latency_ms = pod.latencyEstimateMs(nowMs);
    return r;
  }

  rejected(slot: number): void {
    const requests = this.#ctx.requests;
    const b = requests.loadOwner[slot] as number;
    if (b >= 0) {
      (this.#trackers[b] as LoadTracker).pushbackAt(requests.loadIndex[slot] as number, this.#ctx.scheduler.now);
      this.#pushbacks++;
    }
    this.#end(slot, false);
  }

  counters(): DataplaneCounters {
    return {
      probes: this.#prober?.sent ?? 0,
      probeAnswers: this.#prober?.answered ?? 0,
      loadReports: this.#loadReports,
      pushbacks: this.#pushbacks,
    };
  }

  /** Ends the load record request `slot` started, if a balancer started one. */
  #end(slot: number, ok: boolean): void {
    const requests = this.#ctx.requests;
    const b = requests.loadOwner[slot] as number;
    if (b < 0) return;
    (this.#trackers[b] as LoadTracker).endAt(
      requests.loadIndex[slot] as number,
      requests.loadStartMs[slot] as number,
      ok,
    );
  }
}
