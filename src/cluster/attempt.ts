/**
 * The two seams between a `Cluster` and whatever moves bytes for it.
 *
 * An `Attempt` is one try of one request on one endpoint, handed out by the cluster
 * (`clusterInternals(cluster).acquire()`): the transport sends the request to `attempt.endpoint`, then either
 * calls `end(outcome, response?)` once, or — on a failure — `retry(failure, request)`, which
 * ends this attempt, asks the cluster's one `RetryPolicy` and returns the next attempt (another
 * endpoint when there is one) or the reason there is none. What the response said of the
 * endpoint's load — its status, gRPC status and load report (`AttemptResponse`) — goes with
 * the end, and the cluster applies it (pushback, reports; see `load-feedback.ts`). Load,
 * outlier detection, stats and metrics are updated by the cluster, exactly once per attempt
 * and once per retry, whatever the transport. Attempts are taken by the node:http agent, the proxy's HTTP/1.1 path, the proxy's
 * HTTP/2 streams to `h2` clusters, its `tcp` listeners (one attempt per client connection) and
 * the gRPC policy (one attempt per call);
 * requests sent through `Cluster.dispatch` (the undici pools) follow the same policy inside
 * the cluster (`RoutedRequest`).
 *
 * An `EndpointTransport` is what every transport implements: a connection (or pool, or
 * session) for an endpoint, draining one endpoint (no new work, idle connections close at
 * once, in-flight work finishes), `close()` and `destroy()` under the shared contract
 * (`core/shutdown.ts`). The undici pools (`ClusterTransport`), HTTP/2 sessions
 * (`H2SessionPool`: a place for one stream on a session) and the proxy's HTTP/1.1 sockets
 * (`Http1Upstream`) implement it; none of them picks, retries or keeps load records.
 */
import type { Endpoint } from '../core/endpoint.js';
import type { EvenlbError } from '../core/errors.js';
import type { RequestOutcome } from './cluster-options.js';
import type { AttemptResponse } from './load-feedback.js';
import type { AttemptFailure, RetryReason } from './retry-policy.js';

/** What the retry policy must know about the request an attempt belongs to. */
export interface AttemptRequest {
  readonly method: string;
  /** The body can be sent again (none, a string or bytes). */
  readonly replayable: boolean;
  /** The caller has already seen response headers. */
  readonly responded: boolean;
}

/** One try of a request on one endpoint. */
export interface Attempt {
  readonly endpoint: Endpoint;
  /**
   * Ends the attempt's accounting (load, outlier detection, metrics) with `outcome`, and applies
   * what the endpoint's `response` said of its load — pushback (429, 503, RESOURCE_EXHAUSTED)
   * and its load report (`httpAttemptResponse`, `grpcAttemptResponse` build it); later calls
   * are ignored.
   */
  end(outcome: RequestOutcome, response?: AttemptResponse): void;
  /**
   * Ends this attempt as failed by `failure` and returns the next attempt when the cluster's
   * retry policy allows one, else the error to fail the request with (`undefined`: fail it with
   * the transport's own error). `response` is what the failed attempt's response said (a
   * `status` failure's status counts as pushback without it).
   */
  retry(
    failure: AttemptFailure,
    request: AttemptRequest,
    response?: AttemptResponse,
  ): Attempt | EvenlbError | undefined;
  /**
   * True when `retry(failure, request)` would hand out another attempt now. A transport asks
   * before it withholds a `retryOn` response from its caller (it can show nothing of a
   * response it has discarded). Changes nothing.
   */
  wouldRetry(failure: AttemptFailure, request: AttemptRequest): boolean;
  /**
   * Takes the attempt back as if it had never been handed out: the request never reached the
   * endpoint (a gRPC pick grpc-js did not start). No latency, no outcome; a first attempt's
   * request is not counted either. Ignored once the attempt ended.
   */
  withdraw(): void;
}

/** The retry reasons an attempt chain has used so far. */
export type RetryCounts = Record<RetryReason, number>;

/** Every transport: connections per endpoint, endpoint draining, and the close/destroy contract. */
export interface EndpointTransport<Connection, Args extends unknown[] = []> {
  /** The connection (pool, session) to use for `endpoint`, opened when there is none. */
  connectionFor(endpoint: Endpoint, ...args: Args): Connection;
  /** `endpointKey` left the eligible set: no new work, idle connections close now, in-flight work finishes. */
  drainEndpoint(endpointKey: string): void;
  /** Graceful: in-flight work finishes, then connections close. Always settles; idempotent. */
  close(): Promise<void>;
  /** Abrupt: in-flight work fails with `err`; settles a pending `close()`. Idempotent. */
  destroy(err?: Error): Promise<void>;
}
