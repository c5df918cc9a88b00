import { describe, expect, it } from 'vitest';
import { normalizeHost } from '../../core/host.js';
import { isValidHost, RouteTable } from './route-table.js';

const table = new RouteTable(
  [
    { hosts: ['api.example.com'], pathPrefix: '/v2', cluster: 'api-v2' },
    { hosts: ['api.example.com'], pathPrefix: '/', cluster: 'api' },
    { hosts: ['*.apps.example.com'], pathPrefix: '/', cluster: 'apps' },
    { hosts: ['*'], pathPrefix: '/static', cluster: 'static' },
  ],
  (name) => name,
);

describe('RouteTable', () => {
  const cases: { host: string | undefined; path: string; absolute?: boolean; cluster: string | undefined }[] = [
    { host: 'api.example.com', path: '/v2/users', cluster: 'api-v2' },
    { host: 'API.example.com:8080', path: '/v1', cluster: 'api' },
    { host: 'x.apps.example.com', path: '/', cluster: 'apps' },
    { host: 'other.example', path: '/static/a.css', cluster: 'static' },
    { host: 'other.example', path: '/', cluster: undefined },
    { host: undefined, path: '/static/x', cluster: 'static' },
    { host: 'evil.example', path: '/static/x', absolute: true, cluster: undefined },
    { host: 'api.example.com', path: '/', absolute: true, cluster: 'api' },
  ];
  it.each(cases)('$host $path (absolute $absolute) → $cluster', ({ host, path, absolute, cluster }) => {
    expect(table.match(host, path, absolute ?? false)?.cluster).toBe(cluster);
  });

  it('normalizes hosts', () => {
    expect(normalizeHost('Example.COM.:443')).toBe('example.com');
    expect(normalizeHost('[::1]:8080')).toBe('[::1]');
  });
});

describe('isValidHost (uri-host [":" port])', () => {
  it.each([
    'api.example',
    'api.example:8080',
    'API.Example.',
    '10.0.0.1:80',
    '[::1]:443',
    '[fe80::1]',
    'a_b-c~d',
    'x%41y',
  ])('accepts %s', (h) => expect(isValidHost(h)).toBe(true));
  it.each([
    '',
    'good.example:80@evil.example',
    'good.example/admin',
    'a b',
    'a:80:80',
    'a:123456',
    'a:8x',
    '[::1',
    '[]',
    '[::1]x',
    'a%4',
    'é.example',
    'a\\b',
    'a?b',
    'a#b',
  ])('refuses %j', (h) => expect(isValidHost(h)).toBe(false));
});
