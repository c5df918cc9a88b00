import type { Dispatcher } from 'undici';
import { describe, expect, test } from 'vitest';
import { failHandler, headersToObject, toLegacyHandler } from './handler-adapters.js';

describe('handler adapters', () => {
  test('raw headers become a lower-cased object; repeated names collect into arrays', () => {
    const raw = [Buffer.from('Set-Cookie'), Buffer.from('a=1'), Buffer.from('set-cookie'), Buffer.from('b=2')];
    const obj = headersToObject([
      ...raw,
      Buffer.from('X-One'),
      Buffer.from('\u00e9', 'latin1'),
      Buffer.from('constructor'),
      Buffer.from('c'),
    ]);
    expect(obj).toEqual({ 'set-cookie': ['a=1', 'b=2'], 'x-one': '\u00e9', constructor: 'c' });
    expect(headersToObject(null)).toEqual({});
  });

  test('a controller-style handler is driven by callback-style events; pause/resume/abort map through', () => {
    const events: string[] = [];
    let controller: Dispatcher.DispatchController | undefined;
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        events.push('start');
      },
      onResponseStart(c, status, headers) {
        events.push(`headers ${status} ${String(headers['content-type'])}`);
        c.pause();
      },
      onResponseData(_c, chunk) {
        events.push(`data ${chunk.toString()}`);
      },
      onResponseEnd(_c, trailers) {
        events.push(`end ${JSON.stringify(trailers)}`);
      },
      onResponseError(_c, err) {
        events.push(`error ${err.message}`);
      },
    };
    const legacy = toLegacyHandler(handler);
    const aborted: unknown[] = [];
    let resumed = 0;
    legacy.onConnect((err) => aborted.push(err));
    const keepReading = legacy.onHeaders?.(
      200,
      [Buffer.from('Content-Type'), Buffer.from('text/plain')],
      () => resumed++,
      'OK',
    );
    expect(keepReading).toBe(false);
    controller?.resume();
    expect(resumed).toBe(1);
    expect(legacy.onData?.(Buffer.from('hi'))).toBe(true);
    legacy.onComplete?.(null);
    const reason = new Error('stop');
    controller?.abort(reason);
    controller?.abort(new Error('again'));
    expect(aborted).toEqual([reason]);
    expect(events).toEqual(['start', 'headers 200 text/plain', 'data hi', 'end {}']);
  });

  test('failHandler reaches both styles, also before the request started', () => {
    const errors: string[] = [];
    failHandler({ onResponseError: (c, e) => errors.push(`new ${e.message} ${typeof c.abort}`) }, new Error('x'));
    failHandler(
      { onError: (e: Error) => errors.push(`legacy ${e.message}`) } as unknown as Dispatcher.DispatchHandler,
      new Error('y'),
    );
    expect(errors).toEqual(['new x function', 'legacy y']);
  });
});
