/**
 * The proxy's own HTTP/1.1 data path, end to end over real sockets: the client connection. The
 * HTTP/1.0 and `Expect` handoff to node:http, listener idle / head timeouts, a pipelined request
 * after a refused one, a client half-closing mid-body, and `Connection: close`. Clients are raw
 * `net` sockets parsed by hand (proxy-http1-raw-client.ts); backends and proxy come from
 * proxy-http1-path-fixture.ts.
 */
import { describe, expect, it } from 'vitest';
import { waitFor } from './helpers.js';
import { echo, port, tightPort, useHttp1PathProxy } from './proxy-http1-path-fixture.js';
import { get, RawConn } from './proxy-http1-raw-client.js';

useHttp1PathProxy();

describe('proxy HTTP/1.1 data path: client connection', () => {
  it('serves HTTP/1.0 (no Host; through node:http) and Expect: 100-continue requests', async () => {
    const a = await RawConn.open(port);
    try {
      a.write('GET /h10 HTTP/1.0\r\n\r\n');
      const r = await a.read();
      expect(r.status).toBe(200);
      expect(r.body.toString()).toBe('GET /h10 0');
    } finally {
      a.destroy();
    }
    const b = await RawConn.open(port);
    try {
      b.write('POST /expect HTTP/1.1\r\nHost: echo.test\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n');
      const interim = await b.read({ timeoutMs: 3000 });
      expect(interim.status).toBe(100);
      b.write('hello');
      const r = await b.read();
      expect(r.status).toBe(200);
      expect(r.body.toString()).toBe('POST /expect 5 hello');
    } finally {
      b.destroy();
    }
  });

  it('closes an idle keep-alive connection (idleTimeoutMs: 300) and answers half a head with 408 (headersTimeoutMs: 300)', async () => {
    const idle = await RawConn.open(tightPort);
    try {
      idle.write(get('echo.test', '/before-idle'));
      expect((await idle.read()).status).toBe(200);
      expect(await idle.waitClosed(1500)).toBe(true);
    } finally {
      idle.destroy();
    }
    const half = await RawConn.open(tightPort);
    try {
      half.write('GET /half HTTP/1.1\r\nHost: echo.test\r\n');
      const r = await half.read({ timeoutMs: 2000 });
      expect(r.status).toBe(408);
      expect(await half.waitClosed(1500)).toBe(true);
    } finally {
      half.destroy();
    }
  });

  it('answers a pipelined request that follows a refused one (404) on the same connection', async () => {
    const c = await RawConn.open(port);
    try {
      c.write(
        `GET http://elsewhere.example/x HTTP/1.1\r\nHost: elsewhere.example\r\n\r\n${get('echo.test', '/after')}`,
      );
      const refused = await c.read();
      expect(refused.status).toBe(404);
      const next = await c.read();
      expect(next.status).toBe(200);
      expect(next.body.toString()).toBe('GET /after 0');
    } finally {
      c.destroy();
    }
  });

  it('gives up a request whose client half-closes before the body is complete', async () => {
    const c = await RawConn.open(port);
    echo.uploadBytes = 0;
    c.write('POST /upload HTTP/1.1\r\nHost: echo.test\r\nContent-Length: 1000\r\n\r\n0123456789');
    await waitFor(() => echo.uploadBytes === 10, 5000, 'the partial body at the backend');
    c.socket.end();
    await waitFor(() => c.closed, 3000, 'the proxy to close the connection');
  });

  it('honours Connection: close: connection: close in the response, then the socket closes', async () => {
    const c = await RawConn.open(port);
    try {
      c.write(get('echo.test', '/bye', 'Connection: close\r\n'));
      const r = await c.read();
      expect(r.status).toBe(200);
      expect(r.body.toString()).toBe('GET /bye 0');
      expect(r.headers.connection).toBe('close');
      expect(await c.waitClosed(3000)).toBe(true);
    } finally {
      c.destroy();
    }
  });
});
