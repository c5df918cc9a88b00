/**
 * Prometheus instruments of fair-share shedding (server recycler and proxy listeners), named
 * in one place. Shed connections also count in `evenlb_server_connections_closed_total` with
 * `reason="fair-share"`; these add the view behind each decision.
 */
import type { Counter, Gauge, Registry } from 'prom-client';
import type { FairShareDecision } from '../balancing/fair-share/fair-share-decider.js';
import { registeredCounter, registeredGauge } from './registered-instruments.js';

export const fairShareMetricNames = Object.freeze({
  share: 'evenlb_server_fair_share_ratio',
  meanLoad: 'evenlb_server_fair_share_mean_load',
  ownLoad: 'evenlb_server_fair_share_own_load',
  peersAnswering: 'evenlb_server_fair_share_peers_answering',
  peerFailures: 'evenlb_server_fair_share_peer_failures_total',
  decisions: 'evenlb_server_fair_share_decisions_total',
  shed: 'evenlb_server_fair_share_connections_shed_total',
} as const);

/**
 * @example
 * const m = new FairShareMetrics(new Registry());
 * m.peers(3, 0);
 */
export class FairShareMetrics {
  readonly #share: Gauge;
  readonly #mean: Gauge;
  readonly #own: Gauge;
  readonly #answering: Gauge;
  readonly #failures: Counter;
  readonly #decisions: Counter<'decision'>;
  readonly #shed: Counter;

  constructor(registry: Registry) {
    const n = fairShareMetricNames;
    this.#share = registeredGauge(
      registry,
      n.share,
      'Own load divided by the estimated fleet mean (1 = fair share).',
      [],
    );
    this.#mean = registeredGauge(registry, n.meanLoad, 'Estimated fleet mean load (own and fresh peer answers).', []);
    this.#own = registeredGauge(registry, n.ownLoad, 'Own load, in the unit of the configured load metric.', []);
    this.#answering = registeredGauge(registry, n.peersAnswering, 'Peers whose load answer is fresh.', []);
    this.#failures = registeredCounter(registry, n.peerFailures, 'Load questions to peers that failed.', []);
    this.#decisions = registeredCounter(
      registry,
      n.decisions,
      'Fair-share decisions by outcome: shed, or why not (no-peers, warm-up, cooldown, within-share, no-fit).',
      ['decision'],
    );
    this.#shed = registeredCounter(registry, n.shed, 'Connections closed by fair-share shedding.', []);
  }

  /** Records one decision and the figures it was made on. */
  decided(decision: FairShareDecision, ownLoad: number, shed: number): void {
    this.#own.set(ownLoad);
    if (decision.meanLoad !== undefined) this.#mean.set(decision.meanLoad);
    if (decision.share !== undefined && Number.isFinite(decision.share)) this.#share.set(decision.share);
    this.#decisions.inc({ decision: decision.type === 'shed' ? 'shed' : decision.reason });
    if (shed > 0) this.#shed.inc(shed);
  }

  peers(answering: number, failures: number): void {
    this.#answering.set(answering);
    if (failures > 0) this.#failures.inc(failures);
  }
}
