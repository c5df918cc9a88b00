/**
 * undici has two handler styles: the callback style its `Client` runs (`onConnect`,
 * `onHeaders`, ...; what `undici.request`, `undici.fetch` and Node's `fetch` pass) and the
 * controller style (`onRequestStart`, `onResponseStart`, ...; what `compose()`d interceptors
 * pass). Clusters run the callback style; `toLegacyHandler` adapts a controller-style handler
 * with our own small adapter (undici's lives in a private file that is not part of its API).
 *
 * The adapter keeps undici's semantics: raw header arrays become a lower-cased object
 * (repeated names collect into arrays, values decoded as latin1), `controller.pause()` makes
 * `onHeaders`/`onData` return false and `resume()` calls undici's resume, `abort(reason)` calls
 * the abort function undici gave `onConnect`.
 */
import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { LegacyHandler } from './routed-request.js';

type RawHeaders = Buffer[] | string[] | null | undefined;
type HeaderObject = Record<string, string | string[]>;

/** Raw `[name, value, ...]` header pairs → `{ name: value | value[] }` (names lower-cased). */
export function headersToObject(raw: RawHeaders): HeaderObject {
  const out: HeaderObject = {};
  if (raw === null || raw === undefined) return out;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const key = String(raw[i] instanceof Buffer ? (raw[i] as Buffer).toString('latin1') : raw[i]).toLowerCase();
    const item = raw[i + 1] as Buffer | string | (Buffer | string)[];
    const value = Array.isArray(item) ? item.map((v) => latin1(v)) : latin1(item);
    if (!Object.hasOwn(out, key)) {
      Object.defineProperty(out, key, { value, enumerable: true, configurable: true, writable: true });
      continue;
    }
    const existing = out[key] as string | string[];
    const list = typeof existing === 'string' ? [existing] : existing;
    if (Array.isArray(value)) list.push(...value);
    else list.push(value);
    out[key] = list;
  }
  return out;
}

function latin1(v: Buffer | string): string {
  return typeof v === 'string' ? v : v.toString('latin1');
}

/** The controller a controller-style handler receives, driven by the callback-style events. */
class CallbackController implements Dispatcher.DispatchController {
  readonly #abort: (reason?: Error) => void;
  #paused = false;
  #aborted = false;
  #reason: Error | null = null;
  resumeFn: (() => void) | undefined;
  rawHeaders: RawHeaders = null;
  rawTrailers: RawHeaders = null;

  constructor(abort: (reason?: Error) => void) {
    this.#abort = abort;
  }
  get aborted(): boolean {
    return this.#aborted;
  }
  get paused(): boolean {
    return this.#paused;
  }
  get reason(): Error | null {
    return this.#reason;
  }
  pause(): void {
    this.#paused = true;
  }
  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.resumeFn?.();
  }
  abort(reason: Error): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#abort(reason);
  }
}

/** Runs a controller-style handler from callback-style events. */
class ControllerToCallback implements LegacyHandler {
  readonly #handler: Dispatcher.DispatchHandler;
  #controller: CallbackController | undefined;

  constructor(handler: Dispatcher.DispatchHandler) {
    this.#handler = handler;
  }

  #ctl(): CallbackController {
    // A request failed before it started still needs a controller to report the error on.
    this.#controller ??= new CallbackController(() => {});
    return this.#controller;
  }

  onConnect(abort: (err?: Error) => void, context?: unknown): void {
    this.#controller = new CallbackController(abort);
    this.#handler.onRequestStart?.(this.#controller, context);
  }

  onResponseStarted(): void {
    (this.#handler as { onResponseStarted?: () => void }).onResponseStarted?.();
  }

  onUpgrade(statusCode: number, headers: Buffer[] | string[] | null, socket: Duplex): void {
    const c = this.#ctl();
    c.rawHeaders = headers;
    this.#handler.onRequestUpgrade?.(c, statusCode, headersToObject(headers), socket);
  }

  onHeaders(statusCode: number, headers: Buffer[], resume: () => void, statusText: string): boolean {
    const c = this.#ctl();
    c.resumeFn = resume;
    c.rawHeaders = headers;
    this.#handler.onResponseStart?.(c, statusCode, headersToObject(headers), statusText);
    return !c.paused;
  }

  onData(chunk: Buffer): boolean {
    const c = this.#ctl();
    this.#handler.onResponseData?.(c, chunk);
    return !c.paused;
  }

  onComplete(trailers: string[] | Buffer[] | null): void {
    const c = this.#ctl();
    c.rawTrailers = trailers;
    this.#handler.onResponseEnd?.(c, headersToObject(trailers));
  }

  onError(err: Error): void {
    this.#handler.onResponseError?.(this.#ctl(), err);
  }
}

/**
 * The handler in the callback style undici's Client runs. A handler with `onRequestStart`, or
 * without the callback style's mandatory `onError`, is controller style and gets adapted.
 */
export function toLegacyHandler(handler: Dispatcher.DispatchHandler): LegacyHandler {
  const legacy = handler as Partial<LegacyHandler>;
  return typeof handler.onRequestStart === 'function' || typeof legacy.onError !== 'function'
    ? new ControllerToCallback(handler)
    : (handler as unknown as LegacyHandler);
}

/** Delivers `err` to a handler of either undici style, as a request that never started. */
export function failHandler(handler: Dispatcher.DispatchHandler, err: Error): void {
  toLegacyHandler(handler).onError(err);
}
