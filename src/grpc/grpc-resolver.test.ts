import { describe, expect, it } from 'vitest';
import { defaultAuthorityOf, evenlbTargetOf } from './grpc-resolver.js';

describe('evenlbTargetOf', () => {
  const cases: { uri: { scheme?: string; authority?: string; path: string }; target: string }[] = [
    {
      uri: { scheme: 'static', authority: '', path: '10.0.0.1:80,[::1]:81' },
      target: 'static:///10.0.0.1:80,[::1]:81',
    },
    { uri: { scheme: 'file', authority: '', path: 'etc/evenlb/echo.json' }, target: 'file:///etc/evenlb/echo.json' },
    { uri: { scheme: 'k8s', authority: '', path: 'echo.prod:grpc' }, target: 'k8s:///echo.prod:grpc' },
    // grpc-js maps a bare `host:port` to the dns scheme without an authority.
    { uri: { scheme: 'dns', path: 'echo.prod.svc:50051' }, target: 'dns:///echo.prod.svc:50051' },
  ];
  for (const { uri, target } of cases) it(`${target}`, () => expect(evenlbTargetOf(uri)).toBe(target));

  it('rejects an authority and malformed paths, naming the part', () => {
    expect(() => evenlbTargetOf({ scheme: 'dns', authority: '8.8.8.8', path: 'a.b:53' })).toThrow(/take no authority/);
    expect(() => evenlbTargetOf({ scheme: 'k8s', authority: '', path: 'echo:grpc' })).toThrow(/is not NAME\.NAMESPACE/);
    expect(() => evenlbTargetOf({ scheme: 'static', authority: '', path: '10.0.0.1' })).toThrow(/missing ":PORT"/);
  });
});

describe('defaultAuthorityOf', () => {
  it('names the Service for k8s:///, the host for dns:///, localhost otherwise', () => {
    expect(defaultAuthorityOf('k8s:///echo.prod:grpc')).toBe('echo.prod.svc');
    expect(defaultAuthorityOf('k8s:///echo.prod:50051')).toBe('echo.prod.svc:50051');
    expect(defaultAuthorityOf('dns:///echo.prod.svc.cluster.local:50051')).toBe('echo.prod.svc.cluster.local:50051');
    expect(defaultAuthorityOf('static:///10.0.0.1:80')).toBe('localhost');
  });
});
