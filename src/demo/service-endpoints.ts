/**
 * The demo's EndpointSlice controller: it owns the Service's endpoint list (which pods exist,
 * which are ready, which are terminating) and publishes every change to the phase's balancer:
 * the clients' endpoint sources, the proxy's watched file, or the kube-proxy rules.
 */
import type { EndpointInput } from '../core/endpoint.js';
import type { PodProcess } from './pod-process.js';

export type EndpointPublisher = (endpoints: EndpointInput[]) => Promise<void> | void;

interface Entry {
  readonly pod: PodProcess;
  terminating: boolean;
}

export class ServiceEndpoints {
  readonly #entries: Entry[] = [];
  readonly #publishers: EndpointPublisher[] = [];

  /** Adds a publisher; it receives the current list from the next `publish()` on. */
  addPublisher(publisher: EndpointPublisher): void {
    this.#publishers.push(publisher);
  }

  /** The current list, as an EndpointSlice would carry it. */
  list(): EndpointInput[] {
    return this.#entries.map((e) => e.pod.endpoint({ ready: !e.terminating, terminating: e.terminating }));
  }

  add(pod: PodProcess): void {
    this.#entries.push({ pod, terminating: false });
  }

  markTerminating(pod: PodProcess): void {
    for (const e of this.#entries) if (e.pod === pod) e.terminating = true;
  }

  remove(pod: PodProcess): void {
    const i = this.#entries.findIndex((e) => e.pod === pod);
    if (i >= 0) this.#entries.splice(i, 1);
  }

  /** Sends the current list to every publisher. */
  async publish(): Promise<void> {
    const list = this.list();
    for (const p of this.#publishers) await p(list);
  }
}
