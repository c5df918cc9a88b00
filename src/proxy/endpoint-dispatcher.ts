/**
 * Per-request endpoint picking for HTTP/1.1 upstreams, as an undici `dispatch(opts, handler)`:
 * each request asks the cluster's current `Picker` for an endpoint, is sent to `http://ip:port`
 * (so undici keys its connection pool by endpoint, never by the Service name), is counted in
 * the endpoint's `EndpointLoad`, and on a connect failure (or a reused keep-alive connection the
 * endpoint closed before answering) is sent once more to another endpoint. Nothing here
 * balances: the shared `Balancer` decides, this only carries the decision out.
 */
import { Agent, type Dispatcher } from 'undici';
import type { Balancer } from '../balancing/balancer.js';
import type { EndpointLoad } from '../balancing/endpoint-load.js';
import type { PickContext } from '../balancing/picker.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';

/** A request that reached an endpoint: reported once, when it ends. */
export interface DispatchObserver {
  onEndpoint?(endpointKey: string): void;
  onAttemptEnd?(endpointKey: string, ok: boolean, durationMs: number): void;
}

export interface EndpointDispatcherOptions {
  readonly balancer: Balancer;
  readonly connectTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly connectRetries: number;
  readonly maxRequestsPerConnection?: number | undefined;
  readonly keepAliveTimeoutMs?: number | undefined;
  readonly tls?: { readonly ca?: string | Buffer; readonly servername?: string; readonly rejectUnauthorized: boolean };
  readonly observer?: DispatchObserver;
}

const RETRYABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
]);

function errorCode(err: Error): string | undefined {
  const c = (err as { code?: unknown }).code;
  return typeof c === 'string' ? c : undefined;
}

/** Why no endpoint is available, for 503 responses and the `x-evenlb-reason` header. */
export function noEndpointsError(reason: string, cluster: string): EvenlbError {
  return new EvenlbError(
    reason === 'service-not-found' ? ErrorCodes.SERVICE_NOT_FOUND : ErrorCodes.NO_ENDPOINTS,
    `cluster ${cluster}: no endpoint can take the request (${reason})`,
    { details: { reason, cluster } },
  );
}

class Attempt implements Dispatcher.DispatchHandler {
  readonly #owner: EndpointDispatcher;
  readonly #opts: Dispatcher.DispatchOptions;
  readonly #inner: Dispatcher.DispatchHandler;
  readonly #context: PickContext = {};
  #load: EndpointLoad | undefined;
  #startMs = 0;
  #started = false;
  #retriesLeft: number;
  #done = false;

  constructor(
    owner: EndpointDispatcher,
    opts: Dispatcher.DispatchOptions,
    inner: Dispatcher.DispatchHandler,
    retries: number,
  ) {
    this.#owner = owner;
    this.#opts = opts;
    this.#inner = inner;
    this.#retriesLeft = retries;
  }

  send(): boolean {
    const picked = this.#owner.balancer.picker.pick(this.#context);
    if (picked.type === 'none') {
      this.#done = true;
      this.#inner.onResponseError?.(DEAD_CONTROLLER, noEndpointsError(picked.reason, this.#owner.name));
      return true;
    }
    const endpoint = picked.endpoint;
    this.#load = picked.load;
    this.#startMs = picked.load.start();
    this.#owner.observer?.onEndpoint?.(endpoint.key);
    return this.#owner.agent.dispatch({ ...this.#opts, origin: `${this.#owner.scheme}://${endpoint.key}` }, this);
  }

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.#inner.onRequestStart?.(controller, context);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Dispatcher.DispatchHandler extends never ? never : Record<string, string | string[] | undefined>,
    statusMessage?: string,
  ): void {
    this.#started = true;
    this.#inner.onResponseStart?.(controller, statusCode, headers, statusMessage);
    if (statusCode >= 500) this.#failed = true;
  }

  #failed = false;

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#inner.onResponseData?.(controller, chunk);
  }

  onResponseEnd(
    controller: Dispatcher.DispatchController,
    trailers: Record<string, string | string[] | undefined>,
  ): void {
    this.#finish(!this.#failed);
    this.#inner.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, err: Error): void {
    const key = this.#load?.key;
    this.#finish(false);
    if (!this.#started && this.#retriesLeft > 0 && this.#canResend(err) && key !== undefined) {
      this.#retriesLeft--;
      this.#done = false;
      this.#context.exclude = key;
      this.send();
      return;
    }
    this.#inner.onResponseError?.(controller, err);
  }

  #canResend(err: Error): boolean {
    const code = errorCode(err);
    if (code === undefined || !RETRYABLE.has(code)) return false;
    const body = this.#opts.body as { readableDidRead?: boolean } | null | undefined;
    // A streamed body that was already (partly) read cannot be sent again.
    if (body !== null && body !== undefined && typeof body === 'object' && body.readableDidRead === true) return false;
    const method = this.#opts.method;
    // A connect failure never reached the endpoint; any other failure is resent only for idempotent methods.
    if (code === 'ECONNREFUSED' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'EHOSTUNREACH') return true;
    return method === 'GET' || method === 'HEAD' || method === 'OPTIONS' || method === 'PUT' || method === 'DELETE';
  }

  #finish(ok: boolean): void {
    if (this.#done) return;
    this.#done = true;
    const load = this.#load;
    if (load === undefined) return;
    load.end(this.#startMs, ok);
    this.#owner.observer?.onAttemptEnd?.(load.key, ok, performance.now() - this.#startMs);
  }
}

const DEAD_CONTROLLER: Dispatcher.DispatchController = {
  aborted: true,
  paused: false,
  reason: null,
  abort() {},
  pause() {},
  resume() {},
};

export class EndpointDispatcher {
  readonly name: string;
  readonly balancer: Balancer;
  readonly agent: Agent;
  readonly scheme: 'http' | 'https';
  readonly observer: DispatchObserver | undefined;
  readonly #retries: number;

  constructor(name: string, options: EndpointDispatcherOptions) {
    this.name = name;
    this.balancer = options.balancer;
    this.observer = options.observer;
    this.#retries = options.connectRetries;
    this.scheme = options.tls === undefined ? 'http' : 'https';
    const tls = options.tls;
    this.agent = new Agent({
      connectTimeout: options.connectTimeoutMs,
      headersTimeout: options.headersTimeoutMs,
      bodyTimeout: options.bodyTimeoutMs,
      ...(options.keepAliveTimeoutMs === undefined ? {} : { keepAliveTimeout: options.keepAliveTimeoutMs }),
      ...(options.maxRequestsPerConnection === undefined
        ? {}
        : { maxRequestsPerClient: Math.max(1, options.maxRequestsPerConnection - 1) }),
      ...(tls === undefined
        ? {}
        : {
            connect: {
              rejectUnauthorized: tls.rejectUnauthorized,
              ...(tls.ca === undefined ? {} : { ca: tls.ca }),
              ...(tls.servername === undefined ? {} : { servername: tls.servername }),
            },
          }),
    });
  }

  /** Picks an endpoint for this request and sends it there; errors reach `handler.onResponseError`. */
  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    return new Attempt(this, opts, handler, this.#retries).send();
  }

  close(): Promise<void> {
    return this.agent.close();
  }

  destroy(err?: Error): Promise<void> {
    return this.agent.destroy(err ?? null);
  }
}
