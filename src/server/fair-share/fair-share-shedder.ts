/**
 * Fair-share shedding for one server: once per (jittered) period it measures its own load,
 * asks a few random peers theirs over the load exchange, and hands both to the shared
 * `FairShareDecider`; the connections it names retire with reason `fair-share` — gracefully,
 * as every retirement does (HTTP/1: `Connection: close` on the next response; HTTP/2: GOAWAY).
 *
 * Peers come from the Service's endpoints (any endpoint source; `FairSharePeers` keeps them and
 * asks them); this pod is the endpoint with its own address (and port), and its warm-up counts
 * from the moment it is first listed ready.
 * Fail safe: with no fresh peer answer, or while this pod is not listed, nothing is shed; a
 * warning says why (at most once a minute) and the metrics show the peers answering.
 */
import http from 'node:http';
import {
  FairShareDecider,
  type FairShareDecision,
  nextFairSharePeriodMs,
} from '../../balancing/fair-share/fair-share-decider.js';
import { PeerLoadTable } from '../../balancing/fair-share/peer-load-table.js';
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { Random } from '../../core/random.js';
import { discoveryLogger } from '../../discovery/discovery-logger.js';
import '../../discovery/kubernetes/index.js';
import { LoadMeter, type MeteredConnection } from '../../balancing/fair-share/load-meter.js';
import type { FairShareMetrics } from '../../metrics/fair-share-metrics.js';
import type { FairShareLogger, FairShareSettings } from './fair-share-options.js';
import { FairSharePeers } from './fair-share-peers.js';
import { answerLoadRequest, isLoadRequest, LOAD_PROTOCOL, type PeerLoadReport } from './load-exchange.js';

const WARN_EVERY_MS = 60_000;

/**
 * One connection the shedder may retire: its counters, and a graceful retirement at the
 * connection's next response boundary (HTTP/1.1: `Connection: close` on a response; HTTP/2:
 * GOAWAY). A recycler's `TrackedConnection` is one; so is a proxy listener's downstream.
 */
export interface SheddableConnection extends MeteredConnection {
  readonly closed: boolean;
  /** Why it is retiring already, or undefined while it is open (a retiring one is skipped). */
  readonly retiring: string | undefined;
  retire(reason: 'fair-share'): void;
}

/**
 * What the shedder reads from the server it sheds for: a recycled node server's connection
 * registry (`registryShedderHost`) or a proxy listener (its own HTTP/1.1 data path plus
 * node:http2 sessions).
 */
export interface ShedderHost {
  /** The port the server listens on (tells apart pods sharing an address); undefined before it listens. */
  readonly port: number | undefined;
  /** True when the server speaks TLS: a same-port load exchange asks peers over HTTPS. */
  readonly tls: boolean;
  /** True while the server drains: nothing is shed. */
  readonly draining: boolean;
  /** Requests served so far; never decreases (closed connections' requests stay counted). */
  readonly requestsTotal: number;
  /** The connections open now. */
  connections(): Iterable<SheddableConnection>;
}

/** What fair-share shedding has seen and done. */
export interface FairShareStats {
  /** Own load at the last decision (unit of `loadMetric`). */
  readonly ownLoad: number;
  /** Estimated fleet mean at the last decision; undefined without peer answers. */
  readonly meanLoad: number | undefined;
  /** ownLoad / meanLoad at the last decision. */
  readonly share: number | undefined;
  /** The highest share seen at a decision taken after warm-up. */
  readonly maxShare: number;
  /** Peers listed now (every eligible endpoint but this pod). */
  readonly peers: number;
  /** Peers whose answer is fresh. */
  readonly peersAnswering: number;
  /** Load questions that failed. */
  readonly peerFailures: number;
  /** Connections retired by shedding. */
  readonly shed: number;
  /** Decisions by outcome (`shed`, `no-peers`, `warm-up`, `cooldown`, `within-share`, `no-fit`, `not-listed`). */
  readonly decisions: Readonly<Record<string, number>>;
}

/** One server's shedding; `serveLoadPort` false: the caller serves the load document (`LoadEndpoint`). */
export class FairShareShedder {
  readonly #host: ShedderHost;
  readonly #settings: FairShareSettings;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #decider: FairShareDecider;
  readonly #table: PeerLoadTable;
  readonly #meter: LoadMeter;
  /** Who the peers are, and asking them (`fair-share-peers.ts`). */
  readonly #peers: FairSharePeers;
  readonly #logger: FairShareLogger;
  readonly #metrics: FairShareMetrics | undefined;
  #loadServer: http.Server | undefined;
  #timer: TimerHandle | undefined;
  #unsubscribe: (() => void) | undefined;
  #closed = false;
  #listed = false;
  #lastWarnMs = Number.NEGATIVE_INFINITY;
  #lastWarnKind = '';
  #last: { ownLoad: number; meanLoad: number | undefined; share: number | undefined } = {
    ownLoad: 0,
    meanLoad: undefined,
    share: undefined,
  };
  #maxShare = 0;
  #shed = 0;
  readonly #decisions: Record<string, number> = {};
  /** How long a decision waits for this period's answers: half the period, at most the peer timeout. */
  readonly #answerWaitMs: number;

  constructor(
    host: ShedderHost,
    settings: FairShareSettings,
    clock: Clock,
    random: Random,
    metrics?: FairShareMetrics,
    serveLoadPort = true,
  ) {
    this.#host = host;
    this.#settings = settings;
    this.#clock = clock;
    this.#random = random;
    const { options, decision } = settings;
    this.#decider = new FairShareDecider(decision, clock.now());
    this.#table = new PeerLoadTable(decision, random);
    this.#meter = new LoadMeter(decision.loadMetric, decision.windowMs);
    this.#peers = new FairSharePeers(settings, host.tls, this.#table, clock);
    this.#logger = options.logger ?? discoveryLogger();
    this.#metrics = metrics;
    this.#answerWaitMs = Math.min(options.peerTimeoutMs, decision.periodMs / 2);
    if (options.loadPort !== undefined && serveLoadPort) this.#serveOwnPort(options.loadPort, options.loadHost);
  }

  /** Starts the periodic decisions. */
  start(): void {
    this.#meter.sample(this.#clock.now(), this.#host.requestsTotal, this.#inFlight());
    // A changed endpoint list (a pod added or gone) is news the fleet acts on: decide (and
    // ask the new peers) at once rather than up to a period later.
    this.#unsubscribe = this.#peers.source.subscribe(() => this.#tickSoon());
    this.#schedule();
  }

  /** Answers `req` when it asks for the load document (same-port exchange); true when handled. */
  answer(req: http.IncomingMessage, res: http.ServerResponse): boolean {
    if (this.#settings.options.loadPort !== undefined) return false;
    if (!isLoadRequest(req.method, req.url, this.#settings.options.loadPath)) return false;
    req.resume();
    answerLoadRequest(res, this.report());
    return true;
  }

  /** The load document this pod serves now. */
  report(): PeerLoadReport {
    return {
      protocol: LOAD_PROTOCOL,
      metric: this.#settings.decision.loadMetric,
      load: this.#ownLoad(),
      windowMs: this.#settings.decision.windowMs,
    };
  }

  stats(): FairShareStats {
    const now = this.#clock.now();
    return Object.freeze({
      ...this.#last,
      maxShare: this.#maxShare,
      peers: this.#table.peers.length,
      peersAnswering: this.#table.freshLoads(now).length,
      peerFailures: this.#peers.failures,
      shed: this.#shed,
      decisions: Object.freeze({ ...this.#decisions }),
    });
  }

  /** Stops deciding, closes the exchange and the owned endpoint source; idempotent, always settles. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#timer?.cancel();
    this.#unsubscribe?.();
    const loadServer = this.#loadServer;
    await Promise.all([
      this.#peers.close(),
      loadServer === undefined
        ? undefined
        : new Promise<void>((resolve) => {
            loadServer.close(() => resolve());
            loadServer.closeAllConnections();
          }),
    ]);
  }

  /** Brings the next decision forward to now, unless one is running. */
  #tickSoon(): void {
    if (this.#closed || this.#timer === undefined) return;
    this.#timer.cancel();
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#tick();
    }, 0);
  }

  #schedule(): void {
    if (this.#closed) return;
    this.#timer = this.#clock.setTimeout(
      () => {
        this.#timer = undefined;
        void this.#tick();
      },
      nextFairSharePeriodMs(this.#settings.decision, this.#random),
    );
  }

  #inFlight(): number {
    let n = 0;
    for (const c of this.#host.connections()) n += c.inFlight;
    return n;
  }

  /**
   * Own load now. For the `connections` metric a connection counts once it has carried an
   * application request and while it is not retiring: sockets that only asked for the load
   * document (peers, every period) or were never used are not clients, and a connection already
   * shed is leaving.
   */
  #ownLoad(): number {
    let inFlight = 0;
    let open = 0;
    for (const c of this.#host.connections()) {
      inFlight += c.inFlight;
      if (c.requests > 0 && !c.closed && c.retiring === undefined) open++;
    }
    return this.#meter.load(this.#clock.now(), this.#host.requestsTotal, inFlight, open);
  }

  async #tick(): Promise<void> {
    try {
      await this.#decide();
    } catch (err) {
      this.#warn('error', { err }, 'fair-share: a decision failed; not shedding this period');
    }
    this.#schedule();
  }

  async #decide(): Promise<void> {
    const ownLoad = this.#ownLoad();
    this.#meter.sample(this.#clock.now(), this.#host.requestsTotal, this.#inFlight());
    if (this.#host.draining) return;
    if (!this.#refreshPeers()) {
      this.#count('not-listed');
      this.#warn(
        'not-listed',
        { peers: this.#peers.source.target, self: [...this.#peers.addresses].slice(0, 8) },
        'fair-share: this server is not among the ready endpoints of its peers target; not shedding',
      );
      return;
    }
    const asked = this.#peers.toAsk();
    const answers = asked.map((key) => this.#peers.ask(key));
    // Wait for the answers only up to `answerWaitMs`: a slow or silent peer must not hold the
    // decision back (it would stretch the period to the peer timeout); its answer, when it
    // comes, counts from the next period on.
    let waited: TimerHandle | undefined;
    await Promise.race([
      Promise.all(answers),
      new Promise<void>((resolve) => {
        waited = this.#clock.setTimeout(resolve, this.#answerWaitMs);
      }),
    ]);
    waited?.cancel();
    if (this.#closed) return;
    const now = this.#clock.now();
    const failures = this.#peers.takeFailures();
    const peerLoads = this.#table.freshLoads(now);
    this.#metrics?.peers(peerLoads.length, failures.length);

    const open: SheddableConnection[] = [];
    const loads: number[] = [];
    for (const c of this.#host.connections()) {
      if (c.closed || c.retiring !== undefined) continue;
      open.push(c);
      loads.push(this.#meter.connectionLoad(c, now));
    }
    const decision = this.#decider.decide({ nowMs: now, ownLoad, peerLoads, connectionLoads: loads });
    this.#record(decision, ownLoad);
    if (decision.type === 'hold') {
      if (decision.reason === 'no-peers') {
        this.#warn(
          'no-peers',
          { peers: this.#table.peers.length, asked: asked.length, failures: failures.slice(0, 5) },
          `fair-share: no peer answered the load exchange (${LOAD_PROTOCOL} at ${this.#settings.options.loadPath}); not shedding`,
        );
      }
      this.#metrics?.decided(decision, ownLoad, 0);
      return;
    }
    for (const i of decision.connections) (open[i] as SheddableConnection).retire('fair-share');
    this.#shed += decision.connections.length;
    this.#metrics?.decided(decision, ownLoad, decision.connections.length);
  }

  #record(decision: FairShareDecision, ownLoad: number): void {
    this.#count(decision.type === 'shed' ? 'shed' : decision.reason);
    this.#last = { ownLoad, meanLoad: decision.meanLoad, share: decision.share };
    const warm = decision.type === 'shed' || (decision.reason !== 'warm-up' && decision.reason !== 'no-peers');
    if (warm && decision.share !== undefined && Number.isFinite(decision.share)) {
      this.#maxShare = Math.max(this.#maxShare, decision.share);
    }
  }

  #count(outcome: string): void {
    this.#decisions[outcome] = (this.#decisions[outcome] ?? 0) + 1;
  }

  /** Updates peers from the source; false when this pod is not listed ready (its warm-up starts when it is). */
  #refreshPeers(): boolean {
    if (!this.#peers.refresh(this.#host.port)) {
      this.#listed = false;
      return false;
    }
    if (!this.#listed) {
      this.#listed = true;
      this.#decider.markReady(this.#clock.now());
    }
    return true;
  }

  #warn(kind: string, fields: Record<string, unknown>, message: string): void {
    const now = this.#clock.now();
    if (kind === this.#lastWarnKind && now - this.#lastWarnMs < WARN_EVERY_MS) return;
    this.#lastWarnKind = kind;
    this.#lastWarnMs = now;
    this.#logger.warn({ component: 'recycleConnections.fairShare', ...fields }, message);
  }

  #serveOwnPort(port: number, host: string | undefined): void {
    const server = http.createServer((req, res) => {
      if (isLoadRequest(req.method, req.url, this.#settings.options.loadPath)) {
        req.resume();
        answerLoadRequest(res, this.report());
        return;
      }
      res.writeHead(404).end();
    });
    server.on('error', (err) =>
      this.#warn('load-port', { err, port }, `fair-share: cannot serve the load exchange on port ${port}`),
    );
    server.listen(port, host);
    server.unref();
    this.#loadServer = server;
  }
}
