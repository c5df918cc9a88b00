import { describe, expect, it } from 'vitest';
import {
  downstreamRawHeaders,
  downstreamResponseHeaders,
  requestFraming,
  responseContentLength,
  upstreamRequestHeaders,
} from './hop-headers.js';

const info = { clientAddress: '10.0.0.9', proto: 'https', host: 'svc.example', version: '1.1' };

function pairs(list: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i < list.length; i += 2) out.push([list[i] as string, list[i + 1] as string]);
  return out;
}

describe('upstreamRequestHeaders', () => {
  const cases: { name: string; raw: string[]; keep: [string, string][]; drop: string[] }[] = [
    {
      name: 'hop-by-hop headers and those Connection lists',
      raw: [
        'Connection',
        'keep-alive, X-Private',
        'X-Private',
        '1',
        'Keep-Alive',
        'timeout=5',
        'Upgrade',
        'h2c',
        'Transfer-Encoding',
        'chunked',
        'Proxy-Authorization',
        'x',
        'Proxy-Connection',
        'close',
        'Accept',
        '*/*',
      ],
      keep: [['Accept', '*/*']],
      drop: [
        'connection',
        'x-private',
        'keep-alive',
        'upgrade',
        'transfer-encoding',
        'proxy-authorization',
        'proxy-connection',
      ],
    },
    {
      name: 'TE keeps only trailers',
      raw: ['TE', 'gzip, trailers'],
      keep: [['te', 'trailers']],
      drop: [],
    },
    {
      name: 'TE without trailers is dropped',
      raw: ['te', 'gzip'],
      keep: [],
      drop: ['te'],
    },
    {
      name: 'pseudo-headers and Expect are not forwarded',
      raw: [':path', '/', 'Expect', '100-continue', 'X-A', 'b'],
      keep: [['X-A', 'b']],
      drop: [':path', 'expect'],
    },
  ];
  it.each(cases)('$name', ({ raw, keep, drop }) => {
    const out = pairs(upstreamRequestHeaders(raw, info));
    for (const k of keep) expect(out).toContainEqual(k);
    for (const d of drop)
      expect(out.filter(([n, v]) => n.toLowerCase() === d && !(d === 'te' && v === 'trailers'))).toEqual([]);
  });

  it('trusted: appends X-Forwarded-For and Via, keeps the client X-Forwarded-Proto, Forwarded, X-Real-IP', () => {
    const out = pairs(
      upstreamRequestHeaders(
        [
          'Host',
          'svc.example',
          'X-Forwarded-For',
          '1.1.1.1',
          'X-Forwarded-Proto',
          'http',
          'Forwarded',
          'for=1.1.1.1',
          'X-Real-IP',
          '1.1.1.1',
        ],
        { ...info, trustForwarded: true },
      ),
    );
    expect(out).toContainEqual(['x-forwarded-for', '1.1.1.1, 10.0.0.9']);
    expect(out).toContainEqual(['X-Forwarded-Proto', 'http']);
    expect(out.filter(([n]) => n.toLowerCase() === 'x-forwarded-proto')).toHaveLength(1);
    expect(out).toContainEqual(['x-forwarded-host', 'svc.example']);
    expect(out).toContainEqual(['Forwarded', 'for=1.1.1.1']);
    expect(out).toContainEqual(['X-Real-IP', '1.1.1.1']);
  });

  it('untrusted (default): replaces X-Forwarded-*, removes Forwarded and X-Real-IP, appends Via, sets Host', () => {
    const out = pairs(
      upstreamRequestHeaders(
        [
          'Host',
          'svc.example',
          'X-Forwarded-For',
          '1.1.1.1',
          'X-Forwarded-Proto',
          'http',
          'Via',
          '1.0 edge',
          'Forwarded',
          'for=1.1.1.1',
          'X-Real-IP',
          '1.1.1.1',
        ],
        { ...info, hostRewrite: 'svc.ns.svc' },
      ),
    );
    expect(out.map(([n]) => n.toLowerCase())).not.toContain('forwarded');
    expect(out.map(([n]) => n.toLowerCase())).not.toContain('x-real-ip');
    expect(out).toContainEqual(['host', 'svc.ns.svc']);
    expect(out).toContainEqual(['x-forwarded-for', '10.0.0.9']);
    expect(out).toContainEqual(['x-forwarded-proto', 'https']);
    expect(out).toContainEqual(['x-forwarded-host', 'svc.example']);
    expect(out).toContainEqual(['via', '1.0 edge, 1.1 evenlb']);
    expect(out.filter(([n]) => n.toLowerCase() === 'host')).toHaveLength(1);
  });

  it('regression: framing headers are never forwarded and Connection cannot remove protected headers', () => {
    const raw = [
      'Host',
      'svc.example',
      'Content-Length',
      '54',
      'Transfer-Encoding',
      'chunked',
      'Connection',
      'close, Content-Length, HOST, x-forwarded-for, via, x-ext',
      'X-Ext',
      '1',
      'X-Keep',
      '2',
    ];
    const names = pairs(upstreamRequestHeaders(raw, info)).map(([n]) => n.toLowerCase());
    expect(names).not.toContain('content-length');
    expect(names).not.toContain('transfer-encoding');
    expect(names).not.toContain('x-ext');
    for (const n of ['host', 'x-forwarded-for', 'via', 'x-keep']) expect(names.filter((x) => x === n)).toHaveLength(1);
    expect(requestFraming(false, 54)).toBe('content-length: 54\r\n');
    expect(requestFraming(true, -1)).toBe('transfer-encoding: chunked\r\n');
    expect(requestFraming(false, -1)).toBe('');
  });

  it("never forwards a client's own X-Forwarded-Client-Cert; sets the proxy's when it has one", () => {
    const forged = ['X-Forwarded-Client-Cert', 'Subject="CN=admin"'];
    expect(pairs(upstreamRequestHeaders(forged, info)).map(([n]) => n.toLowerCase())).not.toContain(
      'x-forwarded-client-cert',
    );
    const out = pairs(upstreamRequestHeaders(forged, { ...info, clientCert: 'Hash=ab;DNS=c.example' }));
    expect(out.filter(([n]) => n.toLowerCase() === 'x-forwarded-client-cert')).toEqual([
      ['x-forwarded-client-cert', 'Hash=ab;DNS=c.example'],
    ]);
  });
});

describe('downstream response headers', () => {
  it('regression: Content-Length is never copied, Connection cannot remove framing headers', () => {
    const raw = ['Content-Length', '5', 'Content-Length', '5', 'Connection', 'content-length, x-a', 'X-A', '1'];
    expect(downstreamRawHeaders(raw, '1.1')).toEqual(['via', '1.1 evenlb']);
    expect(responseContentLength(raw)).toBe('5');
    expect(responseContentLength(['content-length', '5x'])).toBeUndefined();
    const obj = downstreamResponseHeaders(
      { connection: 'content-length, x-a', 'content-length': '5', 'x-a': '1' },
      '2',
    );
    expect(obj).toEqual({ 'content-length': '5', via: '2 evenlb' });
  });

  it('drops hop-by-hop headers from an object and adds Via', () => {
    const out = downstreamResponseHeaders(
      { connection: 'x-a', 'x-a': '1', 'keep-alive': 'timeout=5', 'set-cookie': ['a=1', 'b=2'], ':status': '200' },
      '2',
    );
    expect(out).toEqual({ 'set-cookie': ['a=1', 'b=2'], via: '2 evenlb' });
  });

  it('copies a raw Buffer list without hop-by-hop headers, keeping duplicates', () => {
    const raw = [
      'Content-Type',
      'text/plain',
      'Transfer-Encoding',
      'chunked',
      'Set-Cookie',
      'a=1',
      'Set-Cookie',
      'b=2',
      'Connection',
      'X-Gone',
      'X-Gone',
      'y',
    ].map((s) => Buffer.from(s, 'latin1'));
    expect(pairs(downstreamRawHeaders(raw, '1.1'))).toEqual([
      ['Content-Type', 'text/plain'],
      ['Set-Cookie', 'a=1'],
      ['Set-Cookie', 'b=2'],
      ['via', '1.1 evenlb'],
    ]);
  });
});
