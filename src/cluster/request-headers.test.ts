import { describe, expect, test } from 'vitest';
import { findHost, withHost } from './request-headers.js';

describe('withHost', () => {
  test.each([
    { name: 'no headers', headers: undefined, out: ['host', 'svc.ns.svc:443'] },
    { name: 'object without host', headers: { accept: 'x' }, out: { accept: 'x', host: 'svc.ns.svc:443' } },
    { name: 'object with Host kept', headers: { Host: 'other' }, out: { Host: 'other' } },
    { name: 'flat array', headers: ['accept', 'x'], out: ['accept', 'x', 'host', 'svc.ns.svc:443'] },
    { name: 'flat array with host', headers: ['HOST', 'h'], out: ['HOST', 'h'] },
    { name: 'iterable of pairs', headers: new Map([['a', 'b']]), out: ['a', 'b', 'host', 'svc.ns.svc:443'] },
  ])('$name', ({ headers, out }) => {
    const frozen = headers !== undefined && !(headers instanceof Map) ? Object.freeze(headers) : headers;
    expect(withHost(frozen as never, 'svc.ns.svc:443')).toEqual(out);
  });

  test('findHost reads every shape', () => {
    expect(findHost({ Host: 'a' })).toBe('a');
    expect(findHost(['x', 'y', 'host', 'b'])).toBe('b');
    expect(findHost(new Map([['host', 'c']]) as never)).toBe('c');
    expect(findHost(undefined)).toBeUndefined();
  });
});
