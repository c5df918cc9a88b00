/**
 * One request on its way through a `Cluster`: a controller-style undici handler (the style
 * undici 7 defines; its `Client` adapts it to its own internals) wrapped around the caller's
 * handler, already in controller style (`controllerHandler`). It tells the cluster when the
 * request leaves an endpoint and how (success, 5xx, connect failure, transport error, abort)
 * and asks the cluster's `RetryPolicy` whether to try again (connect failures, a kept-alive
 * connection that failed before any answer, `retryOn` statuses within `retryIdempotent`; see
 * `retry-policy.ts`).
 *
 * The caller's handler sees one `RequestController` for the whole request, whatever attempt
 * carries it, and exactly one outcome; a swallowed 5xx body is discarded. The request is also
 * its attempt's `AttemptResponse`: the status and (when the cluster reads reports) the
 * `endpoint-load-metrics` value of the current attempt's response, read in `onResponseStart`.
 */
import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import { LOAD_REPORT_HEADER } from '../balancing/load-report.js';
import type { Endpoint } from '../core/endpoint.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import type { PooledConnection, PoolRequest } from '../pool/pooled-connection.js';
import type { RequestOutcome } from './cluster-options.js';
import { type AttemptResponse, headerValue } from './load-feedback.js';
import { RequestController } from './request-controller.js';
import {
  type AttemptFailure,
  classifyFailure,
  isReplayable,
  noRetries,
  outcomeOf,
  type RetryPolicy,
  type RetryReason,
  type RetryState,
} from './retry-policy.js';

type Controller = Dispatcher.DispatchController;
type Headers = Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseStart']>>[2];

/**
 * What a routed request needs from its cluster (the cluster implements it; the name says whose
 * callbacks these are, like `AttemptHost` for attempt chains).
 */
export interface RoutedRequestHost {
  /** Sends (or queues, or fails) the request; picks an endpoint unless in legacy mode. */
  route(request: RoutedRequest): void;
  /** Legacy mode: the request reached a socket (or failed to); attribute it to that endpoint. */
  bind(request: RoutedRequest): void;
  /** The request left `request.endpoint` with `outcome`. */
  settle(request: RoutedRequest, outcome: RequestOutcome): void;
  /** The request never ran on its endpoint (the pool was draining): undo its accounting. */
  unbind(request: RoutedRequest): void;
  /** Tries again (on another endpoint when there is one); false when the cluster will not. */
  retry(request: RoutedRequest, reason: RetryReason): boolean;
  /** The cluster's retry policy. */
  readonly retryPolicy: RetryPolicy;
  /** The cluster's policy reads load reports: take the report header of responses. */
  readonly readsReports: boolean;
}

export class RoutedRequest implements PoolRequest, AttemptResponse {
  readonly host: RoutedRequestHost;
  readonly opts: Dispatcher.DispatchOptions;
  /** The caller's handler, in controller style. */
  readonly handler: Dispatcher.DispatchHandler;
  readonly https: boolean;
  /** What the caller's handler is given: one controller for every attempt. */
  readonly controller = new RequestController();
  connection: PooledConnection | undefined = undefined;
  /** The endpoint of the current attempt (legacy mode: known once the connection is dialled). */
  endpoint: Endpoint | undefined = undefined;
  /** Load-record start time of the current attempt. */
  startMs = 0;
  /** Endpoint to avoid on the next pick (the one that just failed). */
  exclude: string | undefined = undefined;
  #attemptOpen = false;
  #connected = false;
  #responded = false;
  #swallowing = false;
  /** The current attempt's response status (0 before its head). */
  status = 0;
  /** The current attempt's `endpoint-load-metrics` value (read only when the cluster reads reports). */
  loadReport: string | undefined = undefined;
  /** The connection had carried a request before this attempt (set by the pool). */
  reused = false;
  /** Retries per reason; allocated on the first failure (the hot path has none). */
  #retries: Record<RetryReason, number> | undefined;
  #done = false;

  constructor(
    host: RoutedRequestHost,
    opts: Dispatcher.DispatchOptions,
    handler: Dispatcher.DispatchHandler,
    https: boolean,
  ) {
    this.host = host;
    this.opts = opts;
    this.handler = handler;
    this.https = https;
  }

  /** What the retry policy reads about this request. */
  get #state(): RetryState {
    this.#retries ??= noRetries();
    return {
      method: this.opts.method,
      replayable: isReplayable(this.opts.body),
      responded: this.#responded,
      done: this.#retries,
    };
  }

  /** Starts the current attempt's accounting (called by the cluster once the endpoint is known). */
  open(endpoint: Endpoint, startMs: number): void {
    this.endpoint = endpoint;
    this.startMs = startMs;
    this.#attemptOpen = true;
  }

  get attemptOpen(): boolean {
    return this.#attemptOpen;
  }

  /** Fails the request without it reaching an endpoint (no endpoints, closed cluster...). */
  fail(err: Error): void {
    if (this.#done) return;
    this.#done = true;
    this.handler.onResponseError?.(this.controller, err);
  }

  reroute(): void {
    if (this.#attemptOpen) this.host.unbind(this);
    this.#attemptOpen = false;
    this.connection = undefined;
    this.host.route(this);
  }

  onRequestStart(controller: Controller, context: unknown): void {
    this.#connected = true;
    if (!this.#attemptOpen) this.host.bind(this);
    this.controller.attach(controller);
    this.handler.onRequestStart?.(this.controller, context);
  }

  /** Response bytes began to arrive (undici 7 calls it before the head is parsed). */
  onResponseStarted(): void {
    if (!this.#swallowing) this.handler.onResponseStarted?.();
  }

  onResponseStart(_controller: Controller, statusCode: number, headers: Headers, statusMessage?: string): void {
    if (statusCode >= 200) {
      this.status = statusCode;
      if (this.host.readsReports) this.loadReport = headerValue(headers, LOAD_REPORT_HEADER);
    }
    if (statusCode >= 500 && this.host.retryPolicy.retriesStatus(statusCode, this.#state)) {
      this.#swallowing = true;
      return;
    }
    if (statusCode >= 200) this.#responded = true;
    this.handler.onResponseStart?.(this.controller, statusCode, headers, statusMessage);
  }

  onResponseData(_controller: Controller, chunk: Buffer): void {
    if (!this.#swallowing) this.handler.onResponseData?.(this.controller, chunk);
  }

  onResponseEnd(_controller: Controller, trailers: Headers): void {
    if (this.#swallowing) {
      this.#swallowing = false;
      this.#end('http-error', true);
      if (this.#retry({ type: 'status', status: this.status })) return;
      // Nowhere else to go: nothing can be shown of the discarded response.
      this.#finish(
        new EvenlbError(
          ErrorCodes.NO_ENDPOINTS,
          `upstream answered ${this.status} and no other endpoint is available to retry on`,
          { details: { status: this.status, endpoint: this.endpoint?.key } },
        ),
      );
      return;
    }
    this.#end(this.status >= 500 ? 'http-error' : 'success', true);
    this.#done = true;
    this.handler.onResponseEnd?.(this.controller, trailers);
  }

  onRequestUpgrade(_controller: Controller, statusCode: number, headers: Headers, socket: Duplex): void {
    this.#responded = true;
    this.#end('success', false);
    this.#done = true;
    this.handler.onRequestUpgrade?.(this.controller, statusCode, headers, socket);
  }

  onResponseError(_controller: Controller, err: Error): void {
    if (this.#done) return;
    if (!this.#attemptOpen && this.connection?.endpoint !== undefined) this.host.bind(this);
    const failure = classifyFailure(err, this.#connected, this.reused);
    this.#end(outcomeOf(failure), false);
    if (!this.#retry(failure)) this.#finish(err);
  }

  /** Resets per-attempt state before the cluster sends the request again. */
  prepareRetry(): void {
    this.exclude = this.endpoint?.key;
    this.connection = undefined;
    this.reused = false;
    this.#connected = false;
    this.status = 0;
    this.loadReport = undefined;
  }

  /** Asks the cluster's policy; true when the request was sent again. */
  #retry(failure: AttemptFailure): boolean {
    const state = this.#state;
    const reason = this.host.retryPolicy.decide(failure, state);
    if (reason === undefined) return false;
    const retries = state.done as Record<RetryReason, number>;
    retries[reason]++;
    return this.host.retry(this, reason);
  }

  #end(outcome: RequestOutcome, reusable: boolean): void {
    const conn = this.connection;
    if (conn !== undefined) {
      this.connection = undefined;
      conn.release(reusable);
    }
    if (this.#attemptOpen) {
      this.#attemptOpen = false;
      this.host.settle(this, outcome);
    }
  }

  #finish(err: Error): void {
    if (this.#done) return;
    this.#done = true;
    this.handler.onResponseError?.(this.controller, err);
  }
}
