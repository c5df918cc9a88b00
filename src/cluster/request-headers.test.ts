import { describe, expect, test } from 'vitest';
import { findHost, forEndpoint, ServiceAuthority, serviceHost, withHost } from './request-headers.js';

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

describe('forEndpoint', () => {
  const service = serviceHost('web.prod.svc:8080');
  const base = { origin: 'http://web.prod.svc:8080', path: '/', method: 'GET' };

  test('a request without headers gets the Service Host and the server name undici would derive from it', () => {
    const sent = forEndpoint(Object.freeze({ ...base }), service, undefined) as { servername?: string };
    expect(sent).toMatchObject({ ...base, headers: ['host', 'web.prod.svc:8080'], servername: 'web.prod.svc' });
    expect(forEndpoint(base, service, undefined).headers).toBe(service.hostOnly);
  });

  test("the caller's Host, server name and the configured server name win", () => {
    const ownHost = forEndpoint({ ...base, headers: { host: 'other' } }, service, undefined);
    expect(ownHost).not.toHaveProperty('servername');
    const own = forEndpoint({ ...base, servername: 'mine' } as never, service, 'configured');
    expect((own as { servername?: string }).servername).toBe('mine');
    expect((forEndpoint(base, service, 'configured') as { servername?: string }).servername).toBe('configured');
  });

  test.each([
    ['10.0.0.1:80', undefined],
    ['[::1]:443', undefined],
    ['svc.ns.svc', 'svc.ns.svc'],
    ['svc.ns.svc:443', 'svc.ns.svc'],
  ])('the server name of %s is %s (none for an IP address)', (authority, name) => {
    expect(serviceHost(authority).serverName).toBe(name);
  });

  test('ServiceAuthority: the configured authority, else the origin host, else the fallback', () => {
    expect(new ServiceAuthority('set.svc:443', 'x:1').of('https://a.b').authority).toBe('set.svc:443');
    const a = new ServiceAuthority(undefined, 'fallback:80');
    expect(a.of(undefined).authority).toBe('fallback:80');
    expect(a.of('http://web.prod.svc:8080').authority).toBe('web.prod.svc:8080');
    expect(a.of('http://web.prod.svc').authority).toBe('web.prod.svc');
  });
});
