/**
 * undici has two handler styles: the controller style (`onRequestStart`, `onResponseStart`,
 * `onResponseData`, `onResponseEnd`, `onResponseError`, `onRequestUpgrade`), current in undici 7,
 * and the deprecated callback style (`onConnect`, `onHeaders`, `onData`, `onComplete`,
 * `onError`, `onUpgrade`) that `undici.request`, `undici.fetch` and Node's global `fetch` still
 * pass. A cluster runs the controller style only; `controllerHandler` turns a caller's handler
 * of either style into one.
 *
 * The adaptation is undici's own: `Dispatcher.compose()` hands every interceptor its handler
 * through undici's `WrapHandler` (a callback-style handler is wrapped, a controller-style one
 * passes as it is), so a dispatcher that only receives, composed with an identity interceptor,
 * yields exactly the handler an interceptor would get — without importing a private file of
 * undici. A handler with `onRequestStart`, or without the callback style's mandatory `onError`,
 * is taken as controller style, as before.
 */
import { Dispatcher } from 'undici';
import { RequestController } from './request-controller.js';

/** Receives one handler at a time (synchronously), as `compose()` wrapped it. */
class Receiver extends Dispatcher {
  received: Dispatcher.DispatchHandler | undefined;

  override dispatch(_opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    this.received = handler;
    return true;
  }
}

const receiver = new Receiver();
const wrapping = receiver.compose((dispatch) => dispatch).dispatch;
const NO_OPTIONS = Object.freeze({ path: '/', method: 'GET' }) as Dispatcher.DispatchOptions;

/** True for a handler undici would run as the deprecated callback style. */
function isCallbackStyle(handler: Dispatcher.DispatchHandler): boolean {
  return typeof handler.onRequestStart !== 'function' && typeof handler.onError === 'function';
}

/**
 * `handler` as a controller-style handler: itself, or undici's wrapper of a callback-style one.
 *
 * @example
 * const h = controllerHandler({ onError() {}, onHeaders: () => true, onData: () => true, onComplete() {}, onConnect() {} });
 * h.onRequestStart?.(controller, {}); // calls onConnect with an abort that aborts `controller`
 */
export function controllerHandler(handler: Dispatcher.DispatchHandler): Dispatcher.DispatchHandler {
  if (!isCallbackStyle(handler)) return handler;
  wrapping(NO_OPTIONS, handler);
  const wrapped = receiver.received as Dispatcher.DispatchHandler;
  receiver.received = undefined;
  return wrapped;
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
