/**
 * The attempts of one request sent by a transport the cluster does not own
 * (`clusterInternals(cluster).acquire`): each attempt starts its endpoint's accounting when it
 * is handed out and ends it exactly once — by `end(outcome)`, by `retry(failure, request)`,
 * which asks the cluster's one `RetryPolicy` with the retries the chain has made so far and
 * hands out the next attempt (another endpoint when there is one; the same one only after a
 * stale kept-alive socket, or for a `retryOn` status when the cluster has a single endpoint),
 * or by `withdraw()`, which takes it back as if never handed out.
 */
import type { Endpoint } from '../core/endpoint.js';
import { EvenlbError } from '../core/errors.js';
import type { Attempt, AttemptRequest, RetryCounts } from './attempt.js';
import type { RequestOutcome } from './cluster-options.js';
import type { AttemptResponse } from './load-feedback.js';
import { type AttemptFailure, noRetries, outcomeOf, type RetryPolicy, type RetryReason } from './retry-policy.js';

/** What an attempt chain needs from its cluster. */
export interface AttemptHost {
  readonly retryPolicy: RetryPolicy;
  /** The cluster refuses new work. */
  closed(): boolean;
  /** Picks an endpoint (avoiding `exclude`, by `hash` for hash policies), or the reason none can be picked. */
  pick(exclude: string | undefined, hash: number | undefined): Endpoint | EvenlbError;
  /** Starts the endpoint's load record and window count; returns the start time. */
  open(endpoint: Endpoint): number;
  /** Ends the load record started at `startMs` with `outcome` and what `response` said (outlier detection, metrics). */
  settle(key: string, startMs: number, outcome: RequestOutcome, response: AttemptResponse | undefined): void;
  /** Takes back the load record started at `startMs`; `request` also uncounts its request. */
  withdraw(key: string, startMs: number, request: boolean): void;
  /** Counts one retry (stats, observer). */
  retried(reason: RetryReason): void;
  /** True when an endpoint other than `key` can be picked. */
  elsewhere(key: string): boolean;
}

/** No retries yet: shared by every first attempt until its chain retries (then it gets its own). */
const NONE = Object.freeze(noRetries()) as RetryCounts;

/** The first attempt of a request (or why nothing can be picked); `hash` is its affinity key, if any. */
export function firstAttempt(
  host: AttemptHost,
  exclude: string | undefined,
  counts: RetryCounts = NONE,
  hash?: number,
): Attempt | EvenlbError {
  const picked = host.pick(exclude, hash);
  return picked instanceof EvenlbError ? picked : new ChainAttempt(host, picked, counts, hash);
}

/**
 * An attempt on `endpoint`; `counts` are the chain's retries so far (shared along the chain;
 * omitted: none yet), `hash` the request's affinity key (its retries pick by it too).
 */
export function attemptOn(host: AttemptHost, endpoint: Endpoint, counts: RetryCounts = NONE, hash?: number): Attempt {
  return new ChainAttempt(host, endpoint, counts, hash);
}

/** One attempt of a chain: one object per attempt on the request path, no closures. */
class ChainAttempt implements Attempt {
  readonly endpoint: Endpoint;
  readonly #host: AttemptHost;
  readonly #startMs: number;
  readonly #counts: RetryCounts;
  readonly #hash: number | undefined;
  #open = true;

  constructor(host: AttemptHost, endpoint: Endpoint, counts: RetryCounts, hash: number | undefined) {
    this.endpoint = endpoint;
    this.#host = host;
    this.#counts = counts;
    this.#hash = hash;
    this.#startMs = host.open(endpoint);
  }

  end(outcome: RequestOutcome, response?: AttemptResponse): void {
    if (!this.#open) return;
    this.#open = false;
    this.#host.settle(this.endpoint.key, this.#startMs, outcome, response);
  }

  retry(
    failure: AttemptFailure,
    request: AttemptRequest,
    response?: AttemptResponse,
  ): Attempt | EvenlbError | undefined {
    if (!this.#open) return undefined;
    this.end(outcomeOf(failure), response ?? (failure.type === 'status' ? { status: failure.status } : undefined));
    const reason = this.#reasonFor(failure, request);
    if (reason === undefined) return undefined;
    const host = this.#host;
    // The chain's first retry gives it counts of its own (the shared `NONE` stays all zero).
    const counts = this.#counts === NONE ? noRetries() : this.#counts;
    counts[reason]++;
    host.retried(reason);
    const key = this.endpoint.key;
    return firstAttempt(host, host.elsewhere(key) ? key : undefined, counts, this.#hash);
  }

  withdraw(): void {
    if (!this.#open) return;
    this.#open = false;
    // A chain that has retried has its own counts: only a first attempt carries the request.
    this.#host.withdraw(this.endpoint.key, this.#startMs, this.#counts === NONE);
  }

  wouldRetry(failure: AttemptFailure, request: AttemptRequest): boolean {
    return this.#open && this.#reasonFor(failure, request) !== undefined;
  }

  #reasonFor(failure: AttemptFailure, request: AttemptRequest): RetryReason | undefined {
    const host = this.#host;
    const reason = host.closed() ? undefined : host.retryPolicy.decide(failure, { ...request, done: this.#counts });
    // Another endpoint when there is one; with a single endpoint, a stale kept-alive socket or a
    // retryable status goes to the same one again (as Envoy does: the status may be transient).
    if (reason === undefined || reason === 'reused-connection' || host.elsewhere(this.endpoint.key)) return reason;
    return failure.type === 'status' ? reason : undefined;
  }
}
