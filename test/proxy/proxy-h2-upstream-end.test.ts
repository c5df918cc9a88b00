/**
 * Regression: an HTTP/2 request with a body (POST) forwarded to an `h2` cluster whose upstream
 * answered without trailers never ended for the client. The proxy asked for `wantTrailers`
 * and, with no trailers to send, reset its stream with NO_ERROR, which Node holds back until
 * the stream finishes — and it never did. The response now always ends with a trailers frame
 * (empty when the upstream sent none), as the HTTP/1.1 path already did.
 *
 * Real sockets on loopback: an h2c upstream answering with and without trailers, one proxy
 * listener; HTTP/2 and HTTP/1.1 clients, with and without a request body. Every request must
 * end (bounded wait) with the upstream's status, body and trailers.
 */
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { nextLoopbackAddress } from '../support/loopback-pods.js';
import { type H2Answer as Answer, h2Exchange, startProxy } from './helpers.js';

let upstream: http2.Http2Server;
let proxy: ProxyServer;
let port = 0;

beforeAll(async () => {
  upstream = http2.createServer();
  upstream.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    let body = '';
    stream.setEncoding('utf8');
    stream.on('data', (c: string) => {
      body += c;
    });
    stream.on('end', () => {
      const path = String(headers[':path']);
      const text = `${headers[':method']} ${path} got ${body.length} bytes`;
      if (path === '/trailers') {
        stream.respond({ ':status': 200 }, { waitForTrailers: true });
        stream.once('wantTrailers', () => stream.sendTrailers({ 'x-checksum': 'c0ffee' }));
        stream.end(text);
      } else {
        stream.respond({ ':status': 201, 'content-type': 'text/plain' });
        stream.end(text);
      }
    });
  });
  const address = nextLoopbackAddress();
  await new Promise<void>((r) => upstream.listen(0, address, r));
  const key = `${address}:${(upstream.address() as AddressInfo).port}`;
  proxy = await startProxy({
    listeners: [{ name: 'web', address: '127.0.0.1:0' }],
    clusters: [{ name: 'grpc', target: `static:///${key}`, protocol: 'h2' }],
  });
  port = proxy.listenerPort('web') as number;
});

afterAll(async () => {
  await proxy?.close();
  await new Promise<void>((r) => upstream?.close(() => r()));
});

/** One HTTP/1.1 request through the proxy; rejects when it has not ended within 5 s. */
function h1Request(method: string, path: string, body: string | undefined): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: { host: 'svc.example' }, agent: false });
    req.setTimeout(5000, () => req.destroy(new Error(`HTTP/1.1 ${method} ${path} did not end within 5 s`)));
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, trailers: { ...res.trailers } }));
    });
    req.end(body);
  });
}

describe('an h2 cluster answering without trailers', () => {
  it('ends an HTTP/2 POST with a body (the request that hung)', async () => {
    const a = await h2Exchange(port, 'POST', '/plain', 'x'.repeat(1000));
    expect(a.status).toBe(201);
    expect(a.body).toBe('POST /plain got 1000 bytes');
  });

  it('ends an HTTP/2 GET, twice on fresh sessions, and a POST with an empty body', async () => {
    for (const [method, body] of [
      ['GET', undefined],
      ['GET', undefined],
      ['POST', ''],
    ] as const) {
      const a = await h2Exchange(port, method, '/plain', body);
      expect(a.status).toBe(201);
      expect(a.body).toBe(`${method} /plain got 0 bytes`);
    }
  });

  it('ends HTTP/1.1 requests forwarded to the h2 cluster, with and without a body', async () => {
    const post = await h1Request('POST', '/plain', 'hello');
    expect(post.status).toBe(201);
    expect(post.body).toBe('POST /plain got 5 bytes');
    const get = await h1Request('GET', '/plain', undefined);
    expect(get.status).toBe(201);
    expect(get.body).toBe('GET /plain got 0 bytes');
  });
});

describe('an h2 cluster answering with trailers', () => {
  it('relays them to an HTTP/2 client, with and without a request body', async () => {
    for (const body of [undefined, 'payload']) {
      const a = await h2Exchange(port, body === undefined ? 'GET' : 'POST', '/trailers', body);
      expect(a.status).toBe(200);
      expect(a.trailers?.['x-checksum']).toBe('c0ffee');
    }
  });
});
