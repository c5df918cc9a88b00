/**
 * One request on its way through a `Cluster`: an undici handler (legacy callback style, the
 * style undici's `Client` runs natively) wrapped around the caller's handler. It tells the
 * cluster when the request leaves an endpoint and how (success, 5xx, connect failure,
 * transport error, abort), and decides whether to try again elsewhere:
 *
 * - a connect failure (refused, reset or timed out before anything was written) is retried
 *   once on a different endpoint, whatever the method;
 * - with `retryIdempotent: n`, an idempotent request with a replayable body is retried up to n
 *   times after a transport error or a 502/503/504, as long as the caller has seen nothing.
 *
 * The caller's handler sees exactly one outcome; a swallowed 5xx body is discarded.
 */
import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { Endpoint } from '../core/endpoint.js';
import type { PooledConnection, PoolRequest } from '../pool/endpoint-pool.js';
import type { RequestOutcome } from './cluster-options.js';

/** The handler style undici's Client calls. */
export interface LegacyHandler {
  onConnect(abort: (err?: Error) => void, context?: unknown): void;
  onError(err: Error): void;
  onUpgrade?(statusCode: number, headers: Buffer[] | string[] | null, socket: Duplex): void;
  onResponseStarted?(): void;
  onHeaders?(statusCode: number, headers: Buffer[], resume: () => void, statusText: string): boolean;
  onData?(chunk: Buffer): boolean;
  onComplete?(trailers: string[] | Buffer[] | null): void;
  onBodySent?(chunkSize: number, totalBytesSent?: number): void;
  onRequestSent?(): void;
}

/** What a routed request needs from its cluster. */
export interface RequestRouter {
  /** Sends (or queues, or fails) the request; picks an endpoint unless in legacy mode. */
  route(request: RoutedRequest): void;
  /** Legacy mode: the request reached a socket (or failed to); attribute it to that endpoint. */
  bind(request: RoutedRequest): void;
  /** The request left `request.endpoint` with `outcome`. */
  settle(request: RoutedRequest, outcome: RequestOutcome): void;
  /** The request never ran on its endpoint (the pool was draining): undo its accounting. */
  unbind(request: RoutedRequest): void;
  /** Tries again on another endpoint; false when there is none. */
  retry(request: RoutedRequest, reason: 'connect-failure' | 'idempotent'): boolean;
  readonly retryIdempotent: number;
}

const CONNECT_FAILURE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
]);
/** Methods safe to send again (RFC 9110 §9.2.2). */
export const IDEMPOTENT: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);
/** Statuses an idempotent request is retried on elsewhere (with `retryIdempotent`). */
export const RETRY_STATUS: ReadonlySet<number> = new Set([502, 503, 504]);

function isAbort(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  return err.name === 'AbortError' || code === 'UND_ERR_ABORTED' || code === 'ABORT_ERR';
}

function replayable(body: unknown): boolean {
  return body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array;
}

export class RoutedRequest implements PoolRequest, LegacyHandler {
  readonly router: RequestRouter;
  readonly opts: Dispatcher.DispatchOptions;
  readonly handler: LegacyHandler;
  readonly https: boolean;
  connection: PooledConnection | undefined = undefined;
  /** The endpoint of the current attempt (legacy mode: known once the connection is dialled). */
  endpoint: Endpoint | undefined = undefined;
  /** Load-record start time of the current attempt. */
  startMs = 0;
  /** Endpoint to avoid on the next pick (the one that just failed). */
  exclude: string | undefined = undefined;
  /** The pending discovery timer, while waiting for a first endpoint snapshot. */
  waitTimer: { cancel(): void } | undefined = undefined;
  #attemptOpen = false;
  #connected = false;
  #responded = false;
  #swallowing = false;
  #statusCode = 0;
  #connectRetried = false;
  #idempotentRetries = 0;
  #done = false;

  constructor(router: RequestRouter, opts: Dispatcher.DispatchOptions, handler: LegacyHandler, https: boolean) {
    this.router = router;
    this.opts = opts;
    this.handler = handler;
    this.https = https;
  }

  /** Starts the current attempt's accounting (called by the router once the endpoint is known). */
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
    this.handler.onError(err);
  }

  reroute(): void {
    if (this.#attemptOpen) this.router.unbind(this);
    this.#attemptOpen = false;
    this.connection = undefined;
    this.router.route(this);
  }

  onConnect(abort: (err?: Error) => void, context?: unknown): void {
    this.#connected = true;
    if (!this.#attemptOpen) this.router.bind(this);
    this.handler.onConnect(abort, context);
  }

  onResponseStarted(): void {
    if (!this.#swallowing) this.handler.onResponseStarted?.();
  }

  onHeaders(statusCode: number, headers: Buffer[], resume: () => void, statusText: string): boolean {
    if (statusCode >= 500 && RETRY_STATUS.has(statusCode) && this.#mayRetryIdempotent()) {
      this.#statusCode = statusCode;
      this.#swallowing = true;
      return true;
    }
    if (statusCode >= 200) {
      this.#statusCode = statusCode;
      this.#responded = true;
    }
    return this.handler.onHeaders?.(statusCode, headers, resume, statusText) ?? true;
  }

  onData(chunk: Buffer): boolean {
    if (this.#swallowing) return true;
    return this.handler.onData?.(chunk) ?? true;
  }

  onComplete(trailers: string[] | Buffer[] | null): void {
    if (this.#swallowing) {
      this.#swallowing = false;
      this.#end('http-error', true);
      this.#idempotentRetries++;
      if (this.router.retry(this, 'idempotent')) return;
      // Nowhere else to go: nothing can be shown of the discarded response.
      this.#finish(new Error(`upstream answered ${this.#statusCode} and no other endpoint is available`));
      return;
    }
    this.#end(this.#statusCode >= 500 ? 'http-error' : 'success', true);
    this.#done = true;
    this.handler.onComplete?.(trailers);
  }

  onUpgrade(statusCode: number, headers: Buffer[] | string[] | null, socket: Duplex): void {
    this.#responded = true;
    this.#end('success', false);
    this.#done = true;
    this.handler.onUpgrade?.(statusCode, headers, socket);
  }

  onBodySent(chunkSize: number, totalBytesSent?: number): void {
    this.handler.onBodySent?.(chunkSize, totalBytesSent);
  }

  onRequestSent(): void {
    this.handler.onRequestSent?.();
  }

  onError(err: Error): void {
    if (this.#done) return;
    if (!this.#attemptOpen && this.connection?.endpoint !== undefined) this.router.bind(this);
    if (isAbort(err)) {
      this.#end('aborted', false);
      this.#finish(err);
      return;
    }
    const code = (err as { code?: unknown }).code;
    const connectFailure = !this.#connected && typeof code === 'string' && CONNECT_FAILURE_CODES.has(code);
    this.#end(connectFailure ? 'connect-failure' : 'transport-error', false);
    if (this.#responded) {
      this.#finish(err);
      return;
    }
    if (connectFailure && !this.#connectRetried) {
      this.#connectRetried = true;
      if (this.router.retry(this, 'connect-failure')) return;
    } else if (this.#mayRetryIdempotent()) {
      this.#idempotentRetries++;
      if (this.router.retry(this, 'idempotent')) return;
    }
    this.#finish(err);
  }

  /** Resets per-attempt state before the router sends the request again. */
  prepareRetry(): void {
    this.exclude = this.endpoint?.key;
    this.connection = undefined;
    this.#connected = false;
    this.#statusCode = 0;
  }

  #mayRetryIdempotent(): boolean {
    return (
      !this.#responded &&
      this.#idempotentRetries < this.router.retryIdempotent &&
      IDEMPOTENT.has(this.opts.method) &&
      replayable(this.opts.body)
    );
  }

  #end(outcome: RequestOutcome, reusable: boolean): void {
    const conn = this.connection;
    if (conn !== undefined) {
      this.connection = undefined;
      conn.release(reusable);
    }
    if (this.#attemptOpen) {
      this.#attemptOpen = false;
      this.router.settle(this, outcome);
    }
  }

  #finish(err: Error): void {
    if (this.#done) return;
    this.#done = true;
    this.handler.onError(err);
  }
}
