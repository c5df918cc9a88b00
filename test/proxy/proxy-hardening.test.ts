/**
 * Parsing hardening, checked with raw `net` sockets: request-smuggling shapes (Content-Length
 * with Transfer-Encoding, duplicate or conflicting Content-Length, non-`chunked`
 * Transfer-Encoding, malformed chunking, obs-fold, whitespace before the colon), oversized
 * and too many headers, unknown hosts and absolute-form requests for other hosts. Each must
 * get its 4xx status, the connection must close for 400/431, and no backend may see a request.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { type Backend, startBackend, startProxy } from './helpers.js';

let backend: Backend;
let proxy: ProxyServer;
let port = 0;

beforeAll(async () => {
  backend = await startBackend('b1', '127.0.0.21');
  proxy = await startProxy({
    listeners: [
      {
        name: 'web',
        address: '127.0.0.1:0',
        limits: { maxHeaderBytes: 8192, maxHeaderCount: 50 },
      },
    ],
    clusters: [{ name: 'web', target: `static:///${backend.key}` }],
    routes: [{ hosts: ['svc.example'], cluster: 'web' }],
  });
  port = proxy.listenerPort('web') as number;
});

afterAll(async () => {
  await proxy?.close();
  await backend?.close();
});

/** True once `response` holds a whole response head and its Content-Length body. */
function complete(response: string): boolean {
  const end = response.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const length = /\r\ncontent-length: *(\d+)/i.exec(response.slice(0, end));
  return response.length >= end + 4 + Number(length?.[1] ?? 0);
}

/**
 * Sends raw bytes; resolves with everything received once the proxy closes — or, for a
 * response that keeps the connection (not 400/431), as soon as the whole response is in. At
 * most 3 s.
 */
function raw(text: string): Promise<{ response: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let response = '';
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ response, closed });
    };
    const timer = setTimeout(() => finish(false), 3000);
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => {
      response += c;
      if (complete(response) && !/^HTTP\/1\.1 (400|431)/.test(response)) finish(false);
    });
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', () => {});
    socket.write(text, 'latin1');
  });
}

const smuggled = 'GET /smuggled HTTP/1.1\r\nHost: svc.example\r\n\r\n';

const cases: { name: string; request: string; status: number }[] = [
  {
    name: 'Content-Length with Transfer-Encoding',
    request: `POST / HTTP/1.1\r\nHost: svc.example\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`,
    status: 400,
  },
  {
    name: 'Transfer-Encoding with Content-Length (reversed order)',
    request: `POST / HTTP/1.1\r\nHost: svc.example\r\nTransfer-Encoding: chunked\r\nContent-Length: 50\r\n\r\n0\r\n\r\n${smuggled}`,
    status: 400,
  },
  {
    name: 'conflicting duplicate Content-Length',
    request: `POST / HTTP/1.1\r\nHost: svc.example\r\nContent-Length: 3\r\nContent-Length: 40\r\n\r\nabc${smuggled}`,
    status: 400,
  },
  {
    name: 'identical duplicate Content-Length',
    request: `POST / HTTP/1.1\r\nHost: svc.example\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc`,
    status: 400,
  },
  {
    name: 'Content-Length list',
    request: `POST / HTTP/1.1\r\nHost: svc.example\r\nContent-Length: 3, 3\r\n\r\nabc`,
    status: 400,
  },
  {
    name: 'Transfer-Encoding other than chunked',
    request: `POST / HTTP/1.1\r\nHost: svc.example\r\nTransfer-Encoding: gzip\r\n\r\nabc`,
    status: 400,
  },
  {
    name: 'Transfer-Encoding chunked, identity',
    request: `POST / HTTP/1.1\r\nHost: svc.example\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n`,
    status: 400,
  },
  {
    name: 'duplicate Transfer-Encoding',
    request: `POST / HTTP/1.1\r\nHost: svc.example\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    status: 400,
  },
  {
    name: 'obfuscated Transfer-Encoding (xchunked)',
    request: `POST / HTTP/1.1\r\nHost: svc.example\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n`,
    status: 400,
  },
  {
    name: 'whitespace before the colon',
    request: `POST / HTTP/1.1\r\nHost: svc.example\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n`,
    status: 400,
  },
  {
    name: 'obs-fold header continuation',
    request: `GET / HTTP/1.1\r\nHost: svc.example\r\nX-Folded: a\r\n b\r\n\r\n`,
    status: 400,
  },
  {
    name: 'malformed chunk size',
    request: `POST / HTTP/1.1\r\nHost: svc.example\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n`,
    status: 400,
  },
  {
    name: 'chunk size overflow',
    request: `POST / HTTP/1.1\r\nHost: svc.example\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nabc\r\n0\r\n\r\n`,
    status: 400,
  },
  {
    name: 'missing Host',
    request: `GET / HTTP/1.1\r\n\r\n`,
    status: 400,
  },
  {
    name: 'bare LF line endings',
    request: `GET / HTTP/1.1\nHost: svc.example\n\n`,
    status: 400,
  },
  {
    name: 'oversized header (431)',
    request: `GET / HTTP/1.1\r\nHost: svc.example\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    status: 431,
  },
  {
    name: 'too many headers (431)',
    request: `GET / HTTP/1.1\r\nHost: svc.example\r\n${Array.from({ length: 80 }, (_, i) => `X-H${i}: v\r\n`).join('')}\r\n`,
    status: 431,
  },
  {
    name: 'unknown host (404)',
    request: `GET / HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n`,
    status: 404,
  },
  {
    name: 'absolute-form request for another host (404)',
    request: `GET http://evil.example/ HTTP/1.1\r\nHost: svc.example\r\nConnection: close\r\n\r\n`,
    status: 404,
  },
  {
    name: 'CONNECT tunnel (405)',
    request: `CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n`,
    status: 405,
  },
];

describe('proxy request hardening', () => {
  it.each(cases)('$name → $status, nothing forwarded', async ({ request, status }) => {
    backend.hits = 0;
    const { response, closed } = await raw(request);
    expect(response.slice(0, 12)).toBe(`HTTP/1.1 ${status}`);
    if (status === 400 || status === 431) {
      expect(closed).toBe(true);
      expect(response.toLowerCase()).toContain('connection: close');
    }
    // A probe after it: once the probe has reached the backend, a wrongly forwarded request
    // (sent before the refusal was answered) would have too.
    const probe = await raw('GET /probe HTTP/1.1\r\nHost: svc.example\r\nConnection: close\r\n\r\n');
    expect(probe.response.slice(0, 12)).toBe('HTTP/1.1 200');
    expect(backend.hits).toBe(1);
  });

  it('still forwards a well-formed chunked request and an absolute-form request for a served host', async () => {
    backend.hits = 0;
    const a = await raw(
      'POST / HTTP/1.1\r\nHost: svc.example\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n',
    );
    expect(a.response.slice(0, 12)).toBe('HTTP/1.1 200');
    expect(a.response).toContain('b1 3');
    const b = await raw('GET http://svc.example/x HTTP/1.1\r\nHost: svc.example\r\nConnection: close\r\n\r\n');
    expect(b.response.slice(0, 12)).toBe('HTTP/1.1 200');
    expect(backend.hits).toBe(2);
  });
});
