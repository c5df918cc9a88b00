/**
 * The one retry policy of a `Cluster`: which failures are retried, on which endpoint, how
 * many times. Every transport classifies its failures with `classifyFailure` and asks
 * `RetryPolicy.decide`, so the same failure is retried the same way whatever carried it
 * (undici pools, the node:http agent, the proxy's own sockets) and counted once, by the
 * cluster, as one `retried` event and one ended attempt.
 *
 * The rules (Go's `net/http` transport and Envoy's retry policy agree on them):
 *
 * - `connect-failure` — the connection could not be made, nothing was sent: retried on another
 *   endpoint whatever the method, up to `connectRetries` times (default 1); beyond that like a
 *   transport error;
 * - `reused-connection` — a kept-alive connection failed before any response byte (the peer
 *   closed it while idle): retried once, on another endpoint when there is one, for an
 *   idempotent method with a replayable body — even with `retryIdempotent: 0`, since the
 *   server never saw the request or may safely see it twice;
 * - `transport-error` after the request started, or a status in `retryOn` (default 502, 503,
 *   504) — retried on another endpoint up to `retryIdempotent` times, only for an idempotent
 *   method with a replayable body and only while the caller has seen nothing of a response;
 * - an abort by the caller is never retried.
 */
/** How a request to an endpoint ended. */
export type RequestOutcome =
  /** A response below 500 (or an upgrade). */
  | 'success'
  /** A 5xx response. */
  | 'http-error'
  /** The connection could not be made (nothing was sent). */
  | 'connect-failure'
  /** The connection failed after the request started. */
  | 'transport-error'
  /** The caller aborted. */
  | 'aborted';

/** Error codes that mean "the connection could not be made; nothing was sent". */
export const CONNECT_FAILURE_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'EVENLB_CONNECT_FAILED',
]);

/** Methods safe to send again (RFC 9110 §9.2.2). */
export const IDEMPOTENT: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

/** Statuses an idempotent request is retried on elsewhere by default (`retryOn`). */
export const RETRY_STATUS: ReadonlySet<number> = new Set([502, 503, 504]);

/** Why an attempt is retried (the `reason` of the cluster's `retried` event and metric). */
export type RetryReason = 'connect-failure' | 'reused-connection' | 'idempotent';

/** How an attempt failed, as transports report it to the policy. */
export type AttemptFailure =
  | { readonly type: 'connect-failure' }
  | { readonly type: 'reused-connection' }
  | { readonly type: 'transport-error' }
  | { readonly type: 'status'; readonly status: number }
  | { readonly type: 'aborted' };

/** What the policy needs to know about the request as a whole. */
export interface RetryState {
  readonly method: string;
  /** The body can be sent again (none, a string or bytes; not a stream). */
  readonly replayable: boolean;
  /** The caller has seen response headers (nothing can be retried any more). */
  readonly responded: boolean;
  /** Retries done so far, per reason. */
  readonly done: Readonly<Record<RetryReason, number>>;
}

export interface RetryPolicyOptions {
  /** Extra endpoints tried after connect failures; default 1. */
  readonly connectRetries?: number;
  /** Extra attempts for idempotent requests after transport errors or `retryOn` statuses; default 0. */
  readonly retryIdempotent?: number;
  /** Statuses retried for idempotent requests; default 502, 503, 504. */
  readonly retryOn?: Iterable<number>;
}

/** True for a caller's abort (never retried, never an endpoint's fault). */
export function isAbort(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  return err.name === 'AbortError' || code === 'UND_ERR_ABORTED' || code === 'ABORT_ERR';
}

/** True when a body can be sent again. */
export function isReplayable(body: unknown): boolean {
  return body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array;
}

/**
 * Classifies a transport error. `sent` is whether any byte of the request reached the
 * connection; `reused` whether the connection had carried a request before.
 */
export function classifyFailure(err: Error, sent: boolean, reused: boolean): AttemptFailure {
  if (isAbort(err)) return { type: 'aborted' };
  const code = (err as { code?: unknown }).code;
  const connectCode = typeof code === 'string' && CONNECT_FAILURE_CODES.has(code);
  if (connectCode && !sent && !reused) return { type: 'connect-failure' };
  if (connectCode && reused) return { type: 'reused-connection' };
  return { type: 'transport-error' };
}

/** The outcome an attempt that failed this way ends with (load records, outlier detection, metrics). */
export function outcomeOf(failure: AttemptFailure): RequestOutcome {
  switch (failure.type) {
    case 'connect-failure':
      return 'connect-failure';
    case 'status':
      return 'http-error';
    case 'aborted':
      return 'aborted';
    default:
      return 'transport-error';
  }
}

/** A zeroed retry count. */
export function noRetries(): Record<RetryReason, number> {
  return { 'connect-failure': 0, 'reused-connection': 0, idempotent: 0 };
}

export class RetryPolicy {
  readonly connectRetries: number;
  readonly retryIdempotent: number;
  readonly retryOn: ReadonlySet<number>;

  constructor(options: RetryPolicyOptions = {}) {
    this.connectRetries = options.connectRetries ?? 1;
    this.retryIdempotent = options.retryIdempotent ?? 0;
    this.retryOn = options.retryOn === undefined ? RETRY_STATUS : new Set(options.retryOn);
  }

  /** True when a response with `status` may be swallowed and retried (decided before the caller sees it). */
  retriesStatus(status: number, state: RetryState): boolean {
    return this.retryOn.has(status) && this.decide({ type: 'status', status }, state) !== undefined;
  }

  /** The reason to retry after `failure`, or undefined when the request must fail (or pass the answer on). */
  decide(failure: AttemptFailure, state: RetryState): RetryReason | undefined {
    if (state.responded || failure.type === 'aborted') return undefined;
    const safe = IDEMPOTENT.has(state.method) && state.replayable;
    switch (failure.type) {
      case 'connect-failure':
        if (state.done['connect-failure'] < this.connectRetries) return 'connect-failure';
        break;
      case 'reused-connection':
        if (safe && state.done['reused-connection'] < 1) return 'reused-connection';
        break;
      case 'status':
        if (!this.retryOn.has(failure.status)) return undefined;
        break;
    }
    return safe && state.done.idempotent < this.retryIdempotent ? 'idempotent' : undefined;
  }
}
