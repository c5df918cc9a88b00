/**
 * A simulated pod: an endpoint of the Service with Kubernetes' lifecycle (starting → ready →
 * terminating → gone), a number of workers serving requests concurrently at the pod's
 * speed, and a FIFO queue for the rest — so an overloaded pod shows up as queueing latency,
 * not only as a larger share. It keeps its own counters: requests in the measured window,
 * requests per time bucket, open connections and a latency histogram.
 */
import { createEndpoint, type Endpoint } from '../../core/endpoint.js';
import { LatencyHistogram } from '../metrics/latency-histogram.js';

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
}

/** Dotted-quad text of an IPv4 address held as an unsigned 32-bit integer. */
export function ipv4Text(u32: number): string {
  return `${(u32 >>> 24) & 255}.${(u32 >>> 16) & 255}.${(u32 >>> 8) & 255}.${u32 & 255}`;
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
  readyAtMs: number | undefined;
  removedAtMs: number | undefined;
  state: PodState = 'starting';
  /** Requests being served now (≤ workers). */
  busy = 0;
  /** Requests that arrived inside the measured window. */
  windowRequests = 0;
  /** Requests that arrived, ever. */
  totalRequests = 0;
  /** Connections open to this pod now. */
  openConnections = 0;
  /** Requests that arrived per time bucket (index = floor(t / bucketMs)). */
  series = new Float64Array(16);
  readonly latency = new LatencyHistogram();
  readonly #endpoints: Record<'starting' | 'ready' | 'terminating', Endpoint>;
  #queue = new Int32Array(16);
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
    const base = { address: this.address, port: init.port, targetRef: { kind: 'Pod', name: init.name } };
    this.#endpoints = {
      starting: createEndpoint({ ...base, conditions: { ready: false, serving: false, terminating: false } }),
      ready: createEndpoint({ ...base, conditions: { ready: true, serving: true, terminating: false } }),
      terminating: createEndpoint({ ...base, conditions: { ready: false, serving: true, terminating: true } }),
    };
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

  /** Counts one arriving request in time bucket `bucket`. */
  countArrival(bucket: number, inWindow: boolean): void {
    this.totalRequests++;
    if (inWindow) this.windowRequests++;
    if (bucket >= this.series.length) {
      let cap = this.series.length * 2;
      while (cap <= bucket) cap *= 2;
      const next = new Float64Array(cap);
      next.set(this.series);
      this.series = next;
    }
    this.series[bucket] = (this.series[bucket] as number) + 1;
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
