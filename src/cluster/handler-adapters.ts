/**
 * undici has two handler styles: the callback style its `Client` runs (`onConnect`,
 * `onHeaders`, ...; what `undici.request`, `undici.fetch` and Node's `fetch` pass) and the
 * controller style (`onRequestStart`, `onResponseStart`, ...; what `compose()`d interceptors
 * pass). Clusters run the callback style and adapt the other with undici's own adapter.
 */
import { createRequire } from 'node:module';
import type { Dispatcher } from 'undici';
import type { LegacyHandler } from './routed-request.js';

const require = createRequire(import.meta.url);
/** undici's adapter from the new handler API (`onRequestStart`...) to the callback style its Client runs. */
const UnwrapHandler = require('undici/lib/handler/unwrap-handler.js') as new (
  handler: Dispatcher.DispatchHandler,
) => LegacyHandler;

/** The handler in the callback style undici's Client runs (new-style handlers are adapted). */
export function toLegacyHandler(handler: Dispatcher.DispatchHandler): LegacyHandler {
  return typeof handler.onRequestStart === 'function' ? new UnwrapHandler(handler) : (handler as LegacyHandler);
}

/** Delivers `err` to a handler of either undici style, as a request that never started. */
export function failHandler(handler: Dispatcher.DispatchHandler, err: Error): void {
  toLegacyHandler(handler).onError(err);
}
