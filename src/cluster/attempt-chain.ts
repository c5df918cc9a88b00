/**
 * The attempts of one request sent by a transport the cluster does not own (`Cluster.acquire`):
 * each attempt starts its endpoint's accounting when it is handed out and ends it exactly once
 * — by `end(outcome)`, or by `retry(failure, request)`, which asks the cluster's one
 * `RetryPolicy` with the retries the chain has made so far and hands out the next attempt
 * (another endpoint when there is one; the same one only after a stale kept-alive socket).
 */
import type { Endpoint } from '../core/endpoint.js';
import { EvenlbError } from '../core/errors.js';
import type { Attempt, AttemptRequest, RetryCounts } from './attempt.js';
import type { RequestOutcome } from './cluster-options.js';
import { type AttemptFailure, outcomeOf, type RetryPolicy, type RetryReason } from './retry-policy.js';

/** What an attempt chain needs from its cluster. */
export interface AttemptHost {
  readonly retryPolicy: RetryPolicy;
  /** The cluster refuses new work. */
  closed(): boolean;
  /** Picks an endpoint (avoiding `exclude`, by `hash` for hash policies), or the reason none can be picked. */
  pick(exclude: string | undefined, hash: number | undefined): Endpoint | EvenlbError;
  /** Starts the endpoint's load record and window count; returns the start time. */
  open(endpoint: Endpoint): number;
  /** Ends the load record started at `startMs` with `outcome` (outlier detection, metrics). */
  settle(key: string, startMs: number, outcome: RequestOutcome): void;
  /** Counts one retry (stats, observer). */
  retried(reason: RetryReason): void;
  /** True when an endpoint other than `key` can be picked. */
  elsewhere(key: string): boolean;
}

/** The first attempt of a request (or why nothing can be picked); `hash` is its affinity key, if any. */
export function firstAttempt(
  host: AttemptHost,
  exclude: string | undefined,
  counts: RetryCounts,
  hash?: number,
): Attempt | EvenlbError {
  const picked = host.pick(exclude, hash);
  return picked instanceof EvenlbError ? picked : attemptOn(host, picked, counts, hash);
}

/**
 * An attempt on `endpoint`; `counts` are the chain's retries so far (shared along the chain),
 * `hash` the request's affinity key (its retries pick by it too).
 */
export function attemptOn(host: AttemptHost, endpoint: Endpoint, counts: RetryCounts, hash?: number): Attempt {
  const key = endpoint.key;
  const startMs = host.open(endpoint);
  let open = true;
  const end = (outcome: RequestOutcome): void => {
    if (open) host.settle(key, startMs, outcome);
    open = false;
  };
  const reasonFor = (failure: AttemptFailure, request: AttemptRequest): RetryReason | undefined => {
    const reason = host.closed() ? undefined : host.retryPolicy.decide(failure, { ...request, done: counts });
    return reason === 'reused-connection' || host.elsewhere(key) ? reason : undefined;
  };
  return {
    endpoint,
    end,
    retry(failure, request) {
      if (!open) return undefined;
      end(outcomeOf(failure));
      const reason = reasonFor(failure, request);
      if (reason === undefined) return undefined;
      counts[reason]++;
      host.retried(reason);
      return firstAttempt(host, host.elsewhere(key) ? key : undefined, counts, hash);
    },
    wouldRetry: (failure, request) => open && reasonFor(failure, request) !== undefined,
  };
}
