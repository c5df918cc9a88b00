/**
 * The calls a gRPC channel's picker has picked, from grpc-js's pick to the call's end, each
 * carried by an `Attempt` of the channel's `Cluster`: its load, outcome, outlier detection,
 * stats and metrics are the cluster's, exactly as for every other transport. The outcome is
 * the one gRPC rule (`grpcOutcome`) with the channel's `failureCodes`.
 *
 * grpc-js starts a picked call asynchronously (after call credentials resolve) and calls the
 * pick result's `onCallStarted` only if the stream was really opened; a call can also be
 * picked, then re-picked (its subchannel dropped in between) or end before it starts, and then
 * neither hook runs. Counting only from `onCallStarted` would make a burst of picks in one tick
 * all see zero in flight, so a call counts from its pick; picks that have not started by the
 * next timer turn are withdrawn (`Attempt.withdraw()`: as if never picked), and a late
 * `onCallStarted` (behind slow call credentials) takes a fresh attempt on the same endpoint. A
 * call ends its attempt exactly once, in `onCallEnded`, with its gRPC status code and its
 * trailing metadata: RESOURCE_EXHAUSTED is pushback, and when the policy reads reports the
 * `endpoint-load-metrics` entry is the call's load report (`grpcAttemptResponse`).
 */
import type { Attempt } from '../cluster/attempt.js';
import type { ClusterInternals } from '../cluster/cluster-internals.js';
import { grpcOutcome } from '../cluster/grpc-outcome.js';
import { grpcAttemptResponse, type ReadableMetadata } from '../cluster/load-feedback.js';
import type { Clock, TimerHandle } from '../core/clock.js';

/** One picked call. */
export class PickedCall {
  attempt: Attempt;
  state: 'picked' | 'started' | 'withdrawn' | 'ended' = 'picked';

  constructor(attempt: Attempt) {
    this.attempt = attempt;
  }
}

export class PickedCalls {
  readonly #cluster: ClusterInternals;
  readonly #clock: Clock;
  readonly #failureCodes: ReadonlySet<number>;
  readonly #settled: (endpointKey: string) => void;
  #unstarted: PickedCall[] = [];
  #timer: TimerHandle | undefined;

  /** `settled` runs after a call's attempt ended or was withdrawn (its endpoint may now be idle). */
  constructor(
    cluster: ClusterInternals,
    clock: Clock,
    failureCodes: readonly number[],
    settled: (endpointKey: string) => void,
  ) {
    this.#cluster = cluster;
    this.#clock = clock;
    this.#failureCodes = new Set(failureCodes);
    this.#settled = settled;
  }

  /** A call picked on `attempt`; grpc-js then calls `started` and `ended`. */
  picked(attempt: Attempt): PickedCall {
    const call = new PickedCall(attempt);
    this.#unstarted.push(call);
    this.#timer ??= this.#clock.setTimeout(() => this.#withdrawUnstarted(), 0);
    return call;
  }

  /** grpc-js opened the call's stream. */
  started(call: PickedCall): void {
    if (call.state === 'picked') {
      call.state = 'started';
    } else if (call.state === 'withdrawn') {
      call.state = 'started';
      call.attempt = this.#cluster.track(call.attempt.endpoint);
    }
  }

  /**
   * The call ended with gRPC status `code` and trailing `metadata`. Later calls for the same call
   * are ignored.
   */
  ended(call: PickedCall, code: number, metadata?: ReadableMetadata | null): void {
    if (call.state !== 'started') return;
    call.state = 'ended';
    call.attempt.end(
      grpcOutcome(code, this.#failureCodes),
      grpcAttemptResponse(code, metadata, this.#cluster.readsReports),
    );
    this.#settled(call.attempt.endpoint.key);
  }

  /** Withdraws the picks not started yet and stops the timer (the channel's config or policy went away). */
  close(): void {
    this.#timer?.cancel();
    this.#withdrawUnstarted();
  }

  #withdrawUnstarted(): void {
    this.#timer = undefined;
    const list = this.#unstarted;
    this.#unstarted = [];
    for (const call of list) {
      if (call.state !== 'picked') continue;
      call.state = 'withdrawn';
      call.attempt.withdraw();
      this.#settled(call.attempt.endpoint.key);
    }
  }
}
