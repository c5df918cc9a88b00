/**
 * The peers of one fair-share shedder: who they are and what they answer. Peers are the
 * eligible endpoints of the `peers` target (any endpoint source) but this pod — the endpoint
 * with one of its own addresses (`self`), told apart by port when several pods share an
 * address. Each is asked over the load exchange, never twice at once; an answer goes into the
 * shedder's `PeerLoadTable` when it arrives, a failure is counted and kept for the next
 * decision's warning. Connections to peers that left are closed.
 */
import type { PeerLoadTable } from '../../balancing/fair-share/peer-load-table.js';
import type { Clock } from '../../core/clock.js';
import type { Endpoint } from '../../core/endpoint.js';
import { createEndpointSource } from '../../discovery/create-endpoint-source.js';
import type { EndpointSource } from '../../discovery/endpoint-source.js';
import type { FairShareSettings } from './fair-share-options.js';
import { LoadExchangeClient } from './load-exchange.js';
import { isSelf, selfAddresses } from './self-address.js';

/** Failed questions kept for a decision's warning, at most. */
const MAX_KEPT_FAILURES = 100;

export class FairSharePeers {
  /** Where the peers come from. */
  readonly source: EndpointSource;
  /** This pod's own addresses. */
  readonly addresses: ReadonlySet<string>;
  readonly #ownsSource: boolean;
  readonly #exchange: LoadExchangeClient;
  readonly #table: PeerLoadTable;
  readonly #clock: Clock;
  /** The port peers are asked on (`loadPort`); undefined: each peer's own port. */
  readonly #loadPort: number | undefined;
  readonly #endpoints = new Map<string, Endpoint>();
  /** Peers asked whose answer has not come yet (never asked twice at once). */
  readonly #asking = new Set<string>();
  /** Failed questions since `takeFailures()` last took them. */
  readonly #failures: string[] = [];
  #closed = false;
  /** Load questions that failed, ever. */
  failures = 0;

  /** `tls`: the server speaks TLS (a same-port exchange then asks peers over HTTPS). */
  constructor(settings: FairShareSettings, tls: boolean, table: PeerLoadTable, clock: Clock) {
    const { options, decision } = settings;
    this.#table = table;
    this.#clock = clock;
    this.#loadPort = options.loadPort;
    this.#exchange = new LoadExchangeClient({
      clock,
      timeoutMs: options.peerTimeoutMs,
      metric: decision.loadMetric,
      path: options.loadPath,
      tls: options.loadPort === undefined && tls,
    });
    this.#ownsSource = typeof options.peers === 'string';
    this.source =
      typeof options.peers === 'string'
        ? createEndpointSource(options.peers, { ...(options.discovery ?? {}), clock })
        : options.peers;
    this.addresses = selfAddresses(options.self);
  }

  /**
   * Updates the peers from the source (the table's too) for a server listening on `port`;
   * false when this pod is not listed ready.
   */
  refresh(port: number | undefined): boolean {
    const eligible = this.source.snapshot().endpoints.eligible();
    const candidates = eligible.filter((e) => isSelf(e, this.addresses, undefined));
    const self = candidates.length <= 1 ? candidates[0] : candidates.find((e) => isSelf(e, this.addresses, port));
    this.#endpoints.clear();
    for (const e of eligible) if (e !== self) this.#endpoints.set(e.key, e);
    this.#table.setPeers([...this.#endpoints.keys()]);
    const loadPort = this.#loadPort;
    const exchange = this.#exchange;
    exchange.keepOnly(
      new Set([...this.#endpoints.values()].map((e) => exchange.origin(e.address, loadPort ?? e.port))),
    );
    return self !== undefined;
  }

  /** The peers to ask this period: the table's pick, but those still being asked. */
  toAsk(): string[] {
    return this.#table.pickPeers().filter((key) => !this.#asking.has(key));
  }

  /** Asks one peer; its answer (or failure) is recorded when it arrives, even after the decision. */
  async ask(key: string): Promise<void> {
    const e = this.#endpoints.get(key) as Endpoint;
    this.#asking.add(key);
    try {
      const answer = await this.#exchange.ask(e.address, this.#loadPort ?? e.port);
      if (this.#closed) return;
      if (answer.ok) this.#table.record(key, answer.load, this.#clock.now());
      else {
        this.failures++;
        if (this.#failures.length < MAX_KEPT_FAILURES) this.#failures.push(`${key}: ${answer.error}`);
      }
    } finally {
      this.#asking.delete(key);
    }
  }

  /** The failed questions since the last call (for the decision's warning). */
  takeFailures(): string[] {
    return this.#failures.splice(0);
  }

  /** Closes the exchange's connections and the owned endpoint source; idempotent, always settles. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([
      this.#exchange.close(),
      this.#ownsSource ? this.source.close().catch(() => undefined) : undefined,
    ]);
  }
}
