/**
 * What one parsed `evenlb` config runs on: a `Balancer` (the policy), an `OutlierDetector` (unless
 * turned off) and a `CallTracker`. A channel whose service config changes builds a new engine;
 * calls in flight finish on the old one's load records.
 */

import { Balancer } from '../balancing/balancer.js';
import { OutlierDetector } from '../balancing/outlier-detector.js';
import { balancerOptions, type ClusterObserver, type RequestOutcome } from '../cluster/cluster-options.js';
import { WINDOW_BUCKETS } from '../cluster/endpoint-entry.js';
import type { Clock } from '../core/clock.js';
import type { Random } from '../core/random.js';
import type { GrpcBalancingConfig } from './balancing-config.js';
import { type CallTicket, CallTracker } from './call-tracker.js';
import type { ChannelStats } from './channel-stats.js';
import type { GrpcModule } from './grpc-module.js';

/** What every `evenlb` policy instance of one registration shares. */
export interface BalancerContext {
  readonly grpc: GrpcModule;
  readonly clock: Clock;
  readonly random: Random;
  readonly observer: ClusterObserver | undefined;
  /** Adds (true) or removes (false) a live policy from the registration's stats. */
  track(lb: { stats(): ChannelStats }, live: boolean): void;
}

export interface BalancingEngine {
  readonly config: GrpcBalancingConfig;
  /** The raw config's text: an unchanged config keeps its engine. */
  readonly fingerprint: string;
  readonly balancer: Balancer;
  readonly outlier: OutlierDetector | undefined;
  readonly tracker: CallTracker;
  /** Cancels the detector's and the tracker's timers; idempotent. */
  stop(): void;
}

export interface EngineHooks {
  /** Outlier detection's ejected set changed. */
  ejectedChanged(): void;
  ejected(key: string, durationMs: number): void;
  callEnded(ticket: CallTicket, outcome: RequestOutcome, durationMs: number): void;
  /** A pick was taken back (never started); its endpoint may now be idle. */
  pickWithdrawn(ticket: CallTicket): void;
  /**
   * The Balancer published a new picker on its own (a slow-start ramp or zone step on its
   * refresh tick): the grpc-js picker holding the old one must be replaced.
   */
  pickerChanged(): void;
}

/** Builds the engine of `config`. */
export function createEngine(
  config: GrpcBalancingConfig,
  fingerprint: string,
  clock: Clock,
  random: Random,
  hooks: EngineHooks,
): BalancingEngine {
  const balancer = new Balancer(balancerOptions(config, clock, random));
  const outlier =
    config.outlierDetection === false
      ? undefined
      : new OutlierDetector(config.outlierDetection, {
          clock,
          onChange: () => hooks.ejectedChanged(),
          onEject: (key, ms) => hooks.ejected(key, ms),
        });
  const tracker = new CallTracker(
    clock,
    config.statsWindowMs / WINDOW_BUCKETS,
    config.failureCodes,
    (ticket, outcome, ms) => hooks.callEnded(ticket, outcome, ms),
    (ticket) => hooks.pickWithdrawn(ticket),
  );
  const unsubscribe = balancer.onPicker(() => hooks.pickerChanged());
  return {
    config,
    fingerprint,
    balancer,
    outlier,
    tracker,
    stop() {
      unsubscribe();
      outlier?.close();
      balancer.close();
      tracker.close();
    },
  };
}
