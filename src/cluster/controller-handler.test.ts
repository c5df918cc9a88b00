/**
 * A caller's handler of either undici style becomes a controller-style handler: a
 * callback-style one through an adapter that hands it the connection's raw header and trailer
 * lists, a controller-style one as it is — with or without `onRequestStart`. `failHandler`
 * reaches both.
 */
import type { Dispatcher } from 'undici';
import { describe, expect, test } from 'vitest';
import { controllerHandler, failHandler } from './controller-handler.js';
import { RequestController } from './request-controller.js';

/** A controller standing for undici's, recording what the handler asked of it. */
function targetController(log: string[]): Dispatcher.DispatchController {
  let paused = false;
  return {
    aborted: false,
    reason: null,
    get paused() {
      return paused;
    },
    pause: () => {
      paused = true;
      log.push('pause');
    },
    resume: () => {
      paused = false;
      log.push('resume');
    },
    abort: (reason: Error) => log.push(`abort ${reason.message}`),
  };
}

describe('controllerHandler', () => {
  test('a callback-style handler is wrapped: raw headers, resume and abort map through', () => {
    const events: string[] = [];
    let abort: ((err?: Error) => void) | undefined;
    let resume: (() => void) | undefined;
    const legacy = {
      onConnect(a: (err?: Error) => void) {
        abort = a;
        events.push('connect');
      },
      onHeaders(status: number, raw: Buffer[], r: () => void) {
        resume = r;
        events.push(`headers ${status} ${raw.map(String).join(' ')}`);
        return false;
      },
      onData(chunk: Buffer) {
        events.push(`data ${chunk}`);
        return true;
      },
      onComplete(trailers: Buffer[] | null) {
        events.push(`complete ${(trailers ?? []).map(String).join(' ')}`);
      },
      onError(err: Error) {
        events.push(`error ${err.message}`);
      },
    } as unknown as Dispatcher.DispatchHandler;
    const h = controllerHandler(legacy);
    expect(h).not.toBe(legacy);
    const log: string[] = [];
    const c = targetController(log);
    h.onRequestStart?.(c, {});
    h.onResponseStart?.(c, 200, { 'content-type': 'text/plain' }, 'OK');
    resume?.();
    h.onResponseData?.(c, Buffer.from('hi'));
    h.onResponseEnd?.(c, { 'x-t': '1' });
    abort?.(new Error('stop'));
    h.onResponseError?.(c, new Error('late'));
    expect(events).toEqual([
      'connect',
      'headers 200 content-type text/plain',
      'data hi',
      'complete x-t 1',
      'error late',
    ]);
    expect(log).toEqual(['pause', 'resume', 'abort stop']);
  });

  test("the connection's raw header and trailer lists reach a callback-style handler as they are", () => {
    const seen: unknown[] = [];
    const legacy = {
      onConnect() {},
      onHeaders: (_status: number, raw: Buffer[]) => seen.push(raw) > 0,
      onData: () => true,
      onComplete: (trailers: Buffer[] | null) => seen.push(trailers),
      onError() {},
    } as unknown as Dispatcher.DispatchHandler;
    const rawHeaders = [Buffer.from('Set-Cookie'), Buffer.from('a=1'), Buffer.from('Set-Cookie'), Buffer.from('b=2')];
    const rawTrailers = [Buffer.from('X-Sum'), Buffer.from('1')];
    const c = { ...targetController([]), rawHeaders, rawTrailers };
    const h = controllerHandler(legacy);
    h.onRequestStart?.(c, {});
    h.onResponseStart?.(c, 200, { 'set-cookie': ['a=1', 'b=2'] }, 'OK');
    h.onResponseEnd?.(c, { 'x-sum': '1' });
    expect(seen).toEqual([rawHeaders, rawTrailers]);
    expect(seen[0]).toBe(rawHeaders);
  });

  test('a controller-style handler passes as it is, with or without onRequestStart', () => {
    const full: Dispatcher.DispatchHandler = { onRequestStart() {}, onResponseError() {} };
    const errorOnly: Dispatcher.DispatchHandler = { onResponseError() {} };
    expect(controllerHandler(full)).toBe(full);
    expect(controllerHandler(errorOnly)).toBe(errorOnly);
  });

  test('failHandler reaches both styles, also before the request started', () => {
    const errors: string[] = [];
    failHandler(
      { onResponseError: (c, e) => errors.push(`new ${e.message} ${c.aborted} ${c.paused}`) },
      new Error('x'),
    );
    failHandler(
      { onError: (e: Error) => errors.push(`legacy ${e.message}`) } as unknown as Dispatcher.DispatchHandler,
      new Error('y'),
    );
    expect(errors).toEqual(['new x false false', 'legacy y']);
  });
});

describe('RequestController', () => {
  test("forwards pause, resume and abort to the current attempt's controller", () => {
    const log: string[] = [];
    const c = new RequestController();
    c.attach(targetController(log));
    c.pause();
    c.resume();
    c.abort(new Error('bye'));
    c.abort(new Error('again'));
    expect(log).toEqual(['pause', 'resume', 'abort bye']);
    expect(c.aborted).toBe(true);
    expect(c.reason?.message).toBe('bye');
  });

  test('a pause is kept for the next attempt; an abort between attempts aborts the next one at once', () => {
    const first: string[] = [];
    const second: string[] = [];
    const third: string[] = [];
    const c = new RequestController();
    c.attach(targetController(first));
    c.pause();
    c.attach(targetController(second));
    expect(c.paused).toBe(true);
    c.abort(new Error('gone'));
    c.attach(targetController(third));
    expect(first).toEqual(['pause']);
    expect(second).toEqual(['pause', 'abort gone']);
    expect(third).toEqual(['abort gone']);
  });
});
