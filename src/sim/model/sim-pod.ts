/**
 * A simulated pod: an endpoint of the Service with Kubernetes' lifecycle (starting → ready →
 * terminating → gone), a number of workers serving requests concurrently at the pod's
 * speed, and a FIFO queue for the rest — so an overloaded pod shows up as queueing latency,
 * not only as a larger share. Its speed is its capacity factor (0.5: half the rate of a pod of
 * speed 1); a noisy-neighbour episode divides it by a slowdown factor for a while, and a
 * GC-like pause stops it altogether. It keeps its own counters: requests in the measured
 * window, open connections, busy time (in the simulation's `PodLoads`), and — counted by the simulation in
 * contiguous stores on the hot path and copied here when the run ends — its requests per time
 * bucket and its latency histogram.
 *
 * What a server could tell of itself is readable at any time, cheaply and without side effects
 * on the run — the one place dataplanes that model load reports and probes read it: `inFlight`,
 * `recentUtilization(nowMs)`, `recentRequestsPerSecond(nowMs)` and `latencyEstimateMs(nowMs)`
 * (the latency a request arriving now may expect, as a Prequal server answers a probe).
 */
import { createEndpoint, type Endpoint } from '../../core/endpoint.js';
import type { LatencyHistogram } from '../metrics/latency-histogram.js';
import { PodLoads } from './pod-loads.js';

/** Bucket growth of per-pod latency histograms. */
export const POD_HISTOGRAM_GROWTH = 1.1;

export type PodState = 'starting' | 'ready' | 'terminating' | 'gone';

export interface SimPodInit {
  readonly index: number;
  readonly name: string;
  readonly addressU32: number;
  readonly port: number;
  readonly revision: number;
  readonly speed: number;
  readonly workers: number;
  readonly createdAtMs: number;
  /** One of the pods the scenario starts with (not added by a scale-out or rollout). */
  readonly initial: boolean;
  /** Zone index, -1 = none (see zones.ts); named on the endpoint as `zone-a`, ... */
  readonly zone?: number;
  readonly zoneName?: string;
  /**
   * The simulation's store of pod load figures (busy time in its measured window, recent
   * figures); default: one of the pod's own, over a window never opened, "recent" = 1 s.
   */
  readonly loads?: PodLoads;
}

/** Dotted-quad text of an IPv4 address held as an unsigned 32-bit integer. */
export function ipv4Text(u32: number): string {
  return `${(u32 >>> 24) & 255}.${(u32 >>> 16) & 255}.${(u32 >>> 8) & 255}.${u32 & 255}`;
}

interface EndpointVariants {
  readonly starting: Endpoint;
  readonly ready: Endpoint;
  readonly terminating: Endpoint;
}

/**
 * Endpoint objects are immutable, so pods with the same name, address and port — the same
 * pod in every trial of a scenario — share them instead of building them again per trial.
 */
const variantCache = new Map<string, EndpointVariants>();
const VARIANT_CACHE_LIMIT = 100_000;

function endpointVariants(name: string, address: string, port: number, zone: string | undefined): EndpointVariants {
  const key = `${name}|${address}|${port}|${zone ?? ''}`;
  let v = variantCache.get(key);
  if (v === undefined) {
    const base = { address, port, targetRef: { kind: 'Pod', name }, ...(zone === undefined ? {} : { zone }) };
    v = {
      starting: createEndpoint({ ...base, conditions: { ready: false, serving: false, terminating: false } }),
      ready: createEndpoint({ ...base, conditions: { ready: true, serving: true, terminating: false } }),
      terminating: createEndpoint({ ...base, conditions: { ready: false, serving: true, terminating: true } }),
    };
    if (variantCache.size >= VARIANT_CACHE_LIMIT) variantCache.clear();
    variantCache.set(key, v);
  }
  return v;
}

export class SimPod {
  readonly index: number;
  readonly name: string;
  readonly address: string;
  readonly addressU32: number;
  readonly revision: number;
  readonly speed: number;
  readonly workers: number;
  readonly createdAtMs: number;
  readonly initial: boolean;
  /** Zone index, -1 = none. */
  readonly zone: number;
  readyAtMs: number | undefined;
  removedAtMs: number | undefined;
  state: PodState = 'starting';
  /** Service takes this many times as long now: the product of the noisy-neighbour episodes on it (1 = none). */
  slowdown = 1;
  /** In a GC-like pause: nothing in service progresses. */
  paused = false;
  /** Pauses and slowdown episodes started, ever. */
  pauses = 0;
  slowdowns = 0;
  /** Requests that arrived inside the measured window. */
  windowRequests = 0;
  /** Requests that arrived, ever. */
  totalRequests = 0;
  /** Connections open to this pod now. */
  openConnections = 0;
  /** Requests that arrived per time bucket (index = floor(t / bucketMs)); filled in when the run ends. */
  series: Float64Array = new Float64Array(0);
  /**
   * Latencies of the requests it served in the measured window, coarse (±5%,
   * `POD_HISTOGRAM_GROWTH`); recorded in the simulation's `PodLatencies` and filled in when
   * the run ends.
   */
  latency!: LatencyHistogram;
  /** Busy worker-ms inside the measured window; filled in when the run ends. */
  windowBusyMs = 0;
  /** ms of the measured window during which the pod was ready; filled in when the run ends. */
  windowReadyMs = 0;
  readonly #loads: PodLoads;
  readonly #endpoints: EndpointVariants;
  #queue = new Int32Array(8);
  #head = 0;
  #length = 0;

  constructor(init: SimPodInit) {
    this.index = init.index;
    this.name = init.name;
    this.addressU32 = init.addressU32;
    this.address = ipv4Text(init.addressU32);
    this.revision = init.revision;
    this.speed = init.speed;
    this.workers = init.workers;
    this.createdAtMs = init.createdAtMs;
    this.initial = init.initial;
    this.zone = init.zone ?? -1;
    this.#endpoints = endpointVariants(init.name, this.address, init.port, init.zoneName);
    this.#loads =
      init.loads ?? new PodLoads({ startMs: Number.POSITIVE_INFINITY, endMs: Number.POSITIVE_INFINITY }, 1000);
    this.#loads.add(init.index, init.workers, init.createdAtMs);
  }

  /** Requests being served now (≤ workers; a paused pod holds them without progress). */
  get busy(): number {
    return this.#loads.busy(this.index);
  }

  /** Requests at the pod now: in service and queued. */
  get inFlight(): number {
    return this.#loads.busy(this.index) + this.#length;
  }

  /** Work done per ms of virtual time now, in ms of service at speed 1: speed ÷ slowdown, 0 while paused. */
  get rate(): number {
    return this.paused ? 0 : this.speed / this.slowdown;
  }

  /** Busy workers over workers, averaged over the trailing `server.loadWindowMs` (to 1.25×) up to `nowMs`. */
  recentUtilization(nowMs: number): number {
    return this.#loads.recentUtilization(this.index, nowMs);
  }

  /** Requests completed per second over the same trailing window. */
  recentRequestsPerSecond(nowMs: number): number {
    return this.#loads.recentRequestsPerSecond(this.index, nowMs);
  }

  /**
   * The latency a request arriving at `nowMs` may expect, ms, as an `evenlb/server` answers a
   * probe: its `InFlightLatency` estimate at the pod's in-flight count now (see
   * `PodLoads.latencyAtInFlightMs`); NaN (unknown) before its first response.
   */
  latencyEstimateMs(nowMs: number): number {
    return this.#loads.latencyAtInFlightMs(this.index, this.inFlight, nowMs);
  }

  /** A worker took a request at `nowMs`. */
  startService(nowMs: number): void {
    this.#loads.started(this.index, nowMs);
  }

  /**
   * A worker finished a request that arrived `latencyMs` before `nowMs`, when `arrivedInFlight`
   * requests were at the pod (its `inFlight` then).
   */
  finishService(nowMs: number, latencyMs: number, arrivedInFlight: number): void {
    this.#loads.finished(this.index, nowMs, latencyMs, arrivedInFlight);
  }

  /** Busy worker-ms inside the measured window so far (up to `nowMs`). */
  windowBusyMsAt(nowMs: number): number {
    return this.#loads.windowBusyMs(this.index, nowMs);
  }

  /** The pod's endpoint as an EndpointSlice shows it now; undefined once gone. */
  get endpoint(): Endpoint | undefined {
    return this.state === 'gone' ? undefined : this.#endpoints[this.state];
  }

  /** Every endpoint object this pod has published (for mapping picks back to the pod). */
  get endpointVariants(): readonly Endpoint[] {
    return [this.#endpoints.starting, this.#endpoints.ready, this.#endpoints.terminating];
  }

  get queued(): number {
    return this.#length;
  }

  enqueue(slot: number): void {
    if (this.#length === this.#queue.length) {
      const next = new Int32Array(this.#queue.length * 2);
      for (let i = 0; i < this.#length; i++) next[i] = this.#queue[(this.#head + i) % this.#queue.length] as number;
      this.#queue = next;
      this.#head = 0;
    }
    this.#queue[(this.#head + this.#length) % this.#queue.length] = slot;
    this.#length++;
  }

  /** The oldest queued request, or -1. */
  dequeue(): number {
    if (this.#length === 0) return -1;
    const slot = this.#queue[this.#head] as number;
    this.#head = (this.#head + 1) % this.#queue.length;
    this.#length--;
    return slot;
  }
}
