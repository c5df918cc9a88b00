/**
 * A terminating replica hands its clients over before it stops. Kubernetes marks a pod's
 * endpoint `terminating` as soon as the pod is being deleted — before its containers get
 * SIGTERM, and (with native sidecars) long before a sidecar does. From then on kube-proxy sends
 * it no new connection, but the clients already connected stay pinned to it; when SIGTERM
 * finally closes the idle ones, a client writing its next request at that moment gets a reset.
 * So while its own Service lists this replica as terminating, every open connection is retired
 * gracefully — HTTP/1.1 with `Connection: close` on its next response, HTTP/2 with GOAWAY
 * after which in-flight streams finish — and the clients re-dial, through kube-proxy, to the
 * other replicas. Connections that still arrive meanwhile (kube-proxy's rules lag the
 * EndpointSlice) are retired on the next sweep, every `sweepMs`.
 *
 * The endpoints come from the same target as the fair-share peers (a `k8s:///` target shares
 * the process-wide watch, so this costs the API server nothing more). This replica is the
 * endpoint with its own address (`self`, else `POD_IP`, else the host's addresses) and, when
 * the Service lists that address several times, its listener's port.
 */
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { Endpoint } from '../../core/endpoint.js';
import { createEndpointSource, type EndpointSourceOptions } from '../../discovery/create-endpoint-source.js';
import type { EndpointSource } from '../../discovery/endpoint-source.js';
import '../../discovery/kubernetes/index.js';
import { isSelf, selfAddresses } from '../../server/fair-share/self-address.js';

export interface TerminatingHandoverOptions {
  /** The Service's endpoints: a target URI (a source of its own, closed with this) or a source the caller owns. */
  readonly peers: string | EndpointSource;
  readonly discovery?: EndpointSourceOptions | undefined;
  /** This replica's address as the endpoints list it; default `POD_IP`, else the host's addresses. */
  readonly self?: string | undefined;
  readonly clock: Clock;
  /** The listener's bound port (undefined before it listens). */
  readonly port: () => number | undefined;
  /** Retires every open connection not already retiring; returns how many it retired. */
  readonly retireAll: () => number;
  /** How often connections are retired again while terminating, ms. */
  readonly sweepMs?: number;
}

/**
 * True when `endpoints` list this replica, and as terminating.
 *
 * @example
 * listedTerminating(snapshot.endpoints.endpoints, new Set(['10.1.2.3']), 8080); // true while the pod is being deleted
 */
export function listedTerminating(
  endpoints: readonly Endpoint[],
  addresses: ReadonlySet<string>,
  port: number | undefined,
): boolean {
  const candidates = endpoints.filter((e) => isSelf(e, addresses, undefined));
  const self = candidates.length <= 1 ? candidates[0] : candidates.find((e) => isSelf(e, addresses, port));
  return self?.conditions.terminating === true;
}

/**
 * Watches whether this replica is terminating and retires its connections while it is.
 *
 * @example
 * const handover = new TerminatingHandover({ peers: 'k8s:///web.shop:http', clock, port: () => 8080, retireAll });
 * handover.start();
 * // ... the pod is deleted: every client connection is retired at its next response
 * await handover.close();
 */
export class TerminatingHandover {
  readonly #options: TerminatingHandoverOptions;
  readonly #source: EndpointSource;
  readonly #owned: boolean;
  readonly #addresses: ReadonlySet<string>;
  #unsubscribe: (() => void) | undefined;
  #sweep: TimerHandle | undefined;
  #terminating = false;
  #retired = 0;
  #closed = false;

  constructor(options: TerminatingHandoverOptions) {
    this.#options = options;
    this.#owned = typeof options.peers === 'string';
    this.#source =
      typeof options.peers === 'string'
        ? createEndpointSource(options.peers, { ...(options.discovery ?? {}), clock: options.clock })
        : options.peers;
    this.#addresses = selfAddresses(options.self);
  }

  /** True while the Service lists this replica as terminating. */
  get terminating(): boolean {
    return this.#terminating;
  }

  /** Connections retired because this replica was terminating. */
  get retired(): number {
    return this.#retired;
  }

  /** Starts following the endpoints (once the listener is bound: its port identifies it). */
  start(): void {
    if (this.#closed || this.#unsubscribe !== undefined) return;
    this.#unsubscribe = this.#source.subscribe(() => this.#check());
    this.#check();
  }

  #check(): void {
    if (this.#closed) return;
    const now = listedTerminating(this.#source.snapshot().endpoints.endpoints, this.#addresses, this.#options.port());
    if (now === this.#terminating) return;
    this.#terminating = now;
    if (now) this.#retireAll();
    else {
      this.#sweep?.cancel();
      this.#sweep = undefined;
    }
  }

  #retireAll(): void {
    this.#sweep = undefined;
    if (this.#closed || !this.#terminating) return;
    this.#retired += this.#options.retireAll();
    this.#sweep = this.#options.clock.setTimeout(() => this.#retireAll(), this.#options.sweepMs ?? 500);
  }

  /** Stops following (and closes the source it made); idempotent, always settles. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe?.();
    this.#sweep?.cancel();
    if (this.#owned) await this.#source.close().catch(() => undefined);
  }
}
