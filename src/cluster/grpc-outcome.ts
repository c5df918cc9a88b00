/**
 * The one rule for how a gRPC call's status counts against its endpoint, shared by the gRPC
 * policy (the status grpc-js ends a call with) and the proxy's HTTP/2 path (the `grpc-status`
 * an `h2` cluster's upstream answers with): OK and application errors — statuses not in the
 * failure codes — are a `success` (the endpoint answered); CANCELLED is `aborted` (the caller
 * gave up; not the endpoint's fault, not seen by outlier detection); UNAVAILABLE a
 * `transport-error`; any other failure code an `http-error`, as a 5xx is. The failure codes
 * default to UNKNOWN, DEADLINE_EXCEEDED, INTERNAL, UNAVAILABLE and DATA_LOSS; the gRPC policy's
 * `failureCodes` config replaces them for its channels.
 */
import type { RequestOutcome } from './cluster-options.js';

/** gRPC status codes counted as endpoint failures by default: UNKNOWN, DEADLINE_EXCEEDED, INTERNAL, UNAVAILABLE, DATA_LOSS. */
export const DEFAULT_GRPC_FAILURE_CODES: readonly number[] = Object.freeze([2, 4, 13, 14, 15]);

const DEFAULT_SET: ReadonlySet<number> = new Set(DEFAULT_GRPC_FAILURE_CODES);

/** gRPC `CANCELLED`. */
const CANCELLED = 1;
/** gRPC `UNAVAILABLE`. */
const UNAVAILABLE = 14;

/**
 * How a call that ended with gRPC status `code` counts, in the cluster's vocabulary.
 *
 * @example
 * grpcOutcome(13) // 'http-error' (INTERNAL, a default failure code)
 * grpcOutcome(5) // 'success' (NOT_FOUND: the application's answer)
 * grpcOutcome(13, new Set([14])) // 'success' with a channel's own failureCodes
 */
export function grpcOutcome(code: number, failureCodes: ReadonlySet<number> = DEFAULT_SET): RequestOutcome {
  if (code === 0) return 'success';
  if (code === CANCELLED) return 'aborted';
  if (!failureCodes.has(code)) return 'success';
  return code === UNAVAILABLE ? 'transport-error' : 'http-error';
}

/**
 * The status a `grpc-status` header value carries (`'14'`, or node:http2's array form), or 0 (OK)
 * when there is none — a plain HTTP/2 response. A malformed value counts as UNKNOWN (2).
 *
 * @example
 * grpcStatusOf('14') // 14
 * grpcStatusOf(undefined) // 0
 */
export function grpcStatusOf(value: unknown): number {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text === null) return 0;
  const code = Number(text);
  return Number.isInteger(code) && code >= 0 && code <= 16 ? code : 2;
}
