/**
 * The cluster's side of one proxied HTTP/2 stream to an `h2` cluster: a connected session for
 * an attempt (`H2SessionPool`), a failed session connect retried through the attempt under the
 * cluster's one retry policy, and the outcome a finished stream ends its attempt with.
 */
import http2 from 'node:http2';
import type { Attempt } from '../../cluster/attempt.js';
import type { RequestOutcome } from '../../cluster/cluster-options.js';
import { grpcOutcome, grpcStatusOf } from '../../cluster/grpc-outcome.js';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import type { H2SessionLease, H2SessionPool } from './h2-session-pool.js';

const { NGHTTP2_NO_ERROR } = http2.constants;
const CONNECT_FAILURE = { type: 'connect-failure' } as const;

/** A stream's attempt with its place on a connected session. */
export interface Connected {
  readonly attempt: Attempt;
  readonly lease: H2SessionLease;
}

/**
 * A connected session for `first` (the cluster's first attempt for a stream, or a retry's). A
 * failed session connect is retried through the attempt (another endpoint, as
 * `retries.connectFailures` allows; nothing was sent, so any method may go again); the error
 * says why there is none.
 */
export async function connectStream(
  first: Attempt | EvenlbError,
  pool: H2SessionPool,
  method: string,
): Promise<Connected | Error> {
  let next = first;
  for (;;) {
    if (next instanceof EvenlbError) return next;
    const attempt = next;
    let lease: H2SessionLease;
    try {
      lease = pool.connectionFor(attempt.endpoint);
    } catch (err) {
      attempt.end('aborted');
      return err as Error;
    }
    if (await lease.ready) return { attempt, lease };
    lease.release();
    const retry = attempt.retry(CONNECT_FAILURE, { method, replayable: true, responded: false });
    if (retry === undefined) {
      return new EvenlbError(ErrorCodes.CONNECT_FAILED, `connect to ${attempt.endpoint.key} failed`);
    }
    next = retry;
  }
}

/**
 * The outcome of a stream that closed with `rstCode` after `status` (0: no response) and
 * `grpc-status` (the gRPC policy's rule, `grpcOutcome`, with the default failure codes).
 */
export function streamOutcome(rstCode: number, status: number, grpcStatus: unknown): RequestOutcome {
  if (rstCode !== NGHTTP2_NO_ERROR || status === 0) return 'transport-error';
  return status >= 500 ? 'http-error' : grpcOutcome(grpcStatusOf(grpcStatus));
}
