/**
 * undici has two handler styles: the controller style (`onRequestStart`, `onResponseStart`,
 * `onResponseData`, `onResponseEnd`, `onResponseError`, `onRequestUpgrade`), current in undici 7,
 * and the deprecated callback style (`onConnect`, `onHeaders`, `onData`, `onComplete`,
 * `onError`, `onUpgrade`) that `undici.request`, `undici.fetch` and Node's global `fetch` still
 * pass. A cluster runs the controller style only; `controllerHandler` turns a caller's handler
 * of either style into one: a controller-style handler as it is, a callback-style one through a
 * `CallbackHandlerAdapter`.
 *
 * The adapter hands the caller the raw header and trailer lists undici's connection read (the
 * controller's `rawHeaders` / `rawTrailers`, set before each response callback), so a response
 * is not encoded again per request and the caller sees what a plain undici `Client` gives it:
 * names in their own case, a repeated header as repeated pairs. Only a controller without raw
 * lists has them built from the parsed headers. A callback returning false pauses the
 * controller; the `resume` and `abort` functions the caller is given act on it. A handler with
 * `onRequestStart`, or without the callback style's mandatory `onError`, is taken as
 * controller style (undici's own rule).
 */
import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import { RequestController } from './request-controller.js';

type Controller = Dispatcher.DispatchController;
type Headers = Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseStart']>>[2];
type RawList = Controller['rawHeaders'];

/** True for a handler undici would run as the deprecated callback style. */
function isCallbackStyle(handler: Dispatcher.DispatchHandler): boolean {
  return typeof handler.onRequestStart !== 'function' && typeof handler.onError === 'function';
}

/** A raw `[name, value, ...]` list of `headers`: the connection's own when it has one. */
function rawList(raw: RawList, headers: Headers | null | undefined): Buffer[] {
  if (Array.isArray(raw)) return raw as Buffer[];
  const out: Buffer[] = [];
  if (headers === null || headers === undefined) return out;
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (value === undefined) continue;
    const key = Buffer.from(name, 'latin1');
    if (Array.isArray(value)) for (const v of value) out.push(key, Buffer.from(v, 'latin1'));
    else out.push(key, Buffer.from(String(value), 'latin1'));
  }
  return out;
}

/** A callback-style handler seen through the controller style (one per request). */
class CallbackHandlerAdapter implements Dispatcher.DispatchHandler {
  readonly #handler: Dispatcher.DispatchHandler;
  #controller: Controller | undefined = undefined;
  #abort: ((err?: Error) => void) | undefined = undefined;
  #resume: (() => void) | undefined = undefined;

  constructor(handler: Dispatcher.DispatchHandler) {
    this.#handler = handler;
  }

  onRequestStart(controller: Controller, context: unknown): void {
    this.#controller = controller;
    this.#abort ??= (err?: Error) => this.#controller?.abort(err as Error);
    (this.#handler.onConnect as ((abort: (err?: Error) => void, context: unknown) => void) | undefined)?.(
      this.#abort,
      context,
    );
  }

  onResponseStarted(): void {
    this.#handler.onResponseStarted?.();
  }

  onResponseStart(controller: Controller, statusCode: number, headers: Headers, statusMessage?: string): void {
    this.#controller = controller;
    this.#resume ??= () => this.#controller?.resume();
    const raw = rawList(controller.rawHeaders, headers);
    if (this.#handler.onHeaders?.(statusCode, raw, this.#resume, statusMessage ?? '') === false) controller.pause();
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    if (this.#handler.onData?.(chunk) === false) controller.pause();
  }

  onResponseEnd(controller: Controller, trailers: Headers): void {
    this.#handler.onComplete?.(rawList(controller.rawTrailers, trailers) as unknown as string[]);
  }

  onRequestUpgrade(controller: Controller, statusCode: number, headers: Headers, socket: Duplex): void {
    this.#handler.onUpgrade?.(statusCode, rawList(controller.rawHeaders, headers), socket);
  }

  onResponseError(_controller: Controller, err: Error): void {
    (this.#handler.onError as (err: Error) => void)(err);
  }
}

/**
 * `handler` as a controller-style handler: itself, or an adapter over a callback-style one.
 *
 * @example
 * const h = controllerHandler({ onError() {}, onHeaders: () => true, onData: () => true, onComplete() {}, onConnect() {} });
 * h.onRequestStart?.(controller, {}); // calls onConnect with an abort that aborts `controller`
 */
export function controllerHandler(handler: Dispatcher.DispatchHandler): Dispatcher.DispatchHandler {
  return isCallbackStyle(handler) ? new CallbackHandlerAdapter(handler) : handler;
}

/**
 * Delivers `err` to a handler of either undici style, as a request that never started.
 *
 * @example
 * failHandler(handler, new EvenlbError(ErrorCodes.CLOSED, 'closed')); // onError(err) or onResponseError(controller, err)
 */
export function failHandler(handler: Dispatcher.DispatchHandler, err: Error): void {
  controllerHandler(handler).onResponseError?.(new RequestController(), err);
}
