/**
 * `Expect` and HTTP/1.0 behind the proxy's HTTP/1.1 listener.
 *
 * - `Expect: 100-continue` is answered by the HTTP/1.1 data path once the request is routed:
 *   the client gets `100 Continue`, sends its body, gets the upstream's answer; the upstream
 *   never sees the expectation; the connection stays usable. Any other expectation gets 417.
 * - HTTP/1.0 is served by node:http because its responses must be re-framed for the client:
 *   a chunked upstream response reaches an HTTP/1.0 client de-chunked and close-delimited
 *   (the data path forwards the upstream's framing as it is).
 */
import type http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { type Backend, startBackend, startProxy } from './helpers.js';

let backend: Backend;
let proxy: ProxyServer;
let port = 0;
let lastExpect: string | undefined;

beforeAll(async () => {
  backend = await startBackend('e1', '127.0.0.201', {
    handler: (req: http.IncomingMessage, res: http.ServerResponse) => {
      lastExpect = req.headers.expect;
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        // No length: node:http sends it chunked to the proxy.
        res.write(`${req.method} ${req.url} `);
        res.end(Buffer.concat(chunks).toString());
      });
    },
  });
  proxy = await startProxy({
    listeners: [{ name: 'main', address: '127.0.0.1:0' }],
    clusters: [{ name: 'echo', target: `static:///${backend.key}` }],
    routes: [{ hosts: ['echo.test'], cluster: 'echo' }],
  });
  port = proxy.listenerPort('main') as number;
});

afterAll(async () => {
  await proxy.close();
  await backend.close();
});

/** A raw client: collects bytes, waits (bounded) until `done(text)` holds or the socket ends. */
class Raw {
  readonly socket: net.Socket;
  text = '';
  ended = false;
  #wake: (() => void) | undefined;

  constructor() {
    this.socket = net.connect(port, '127.0.0.1');
    this.socket.on('data', (c: Buffer) => {
      this.text += c.toString('latin1');
      this.#wake?.();
    });
    this.socket.on('close', () => {
      this.ended = true;
      this.#wake?.();
    });
    this.socket.on('error', () => {});
  }

  async until(done: (text: string) => boolean, timeoutMs = 3000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (!done(this.text) && !this.ended && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        setTimeout(resolve, 50);
      });
    }
    return this.text;
  }
}

describe('Expect and HTTP/1.0', () => {
  it('answers Expect: 100-continue, forwards the body without the expectation, and keeps the connection', async () => {
    const c = new Raw();
    try {
      c.socket.write('POST /e HTTP/1.1\r\nHost: echo.test\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n');
      expect(await c.until((t) => t.includes('\r\n\r\n'))).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n$/);
      c.socket.write('hello');
      // The data path forwards the upstream's chunked framing as it is: wait for its last chunk.
      const answer = await c.until((t) => t.endsWith('\r\n0\r\n\r\n'));
      expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
      expect(answer).toContain('transfer-encoding: chunked');
      expect(answer).toContain('hello');
      expect(lastExpect).toBeUndefined();
      c.text = '';
      c.socket.write('GET /after HTTP/1.1\r\nHost: echo.test\r\n\r\n');
      const after = await c.until((t) => t.endsWith('\r\n0\r\n\r\n'));
      expect(after).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(after).toContain('GET /after');
      expect(c.ended).toBe(false);
    } finally {
      c.socket.destroy();
    }
  });

  it('refuses any other expectation with 417', async () => {
    const c = new Raw();
    try {
      c.socket.write('GET /x HTTP/1.1\r\nHost: echo.test\r\nExpect: something-else\r\n\r\n');
      expect(await c.until((t) => t.includes('\r\n\r\n'))).toMatch(/^HTTP\/1\.1 417 /);
    } finally {
      c.socket.destroy();
    }
  });

  it('gives an HTTP/1.0 client a chunked upstream response de-chunked and close-delimited', async () => {
    const c = new Raw();
    try {
      c.socket.write('GET /old HTTP/1.0\r\nHost: echo.test\r\n\r\n');
      const answer = await c.until(() => false);
      expect(c.ended).toBe(true);
      const [head, body] = answer.split('\r\n\r\n') as [string, string];
      expect(head).toMatch(/^HTTP\/1\.1 200 OK/);
      expect(head.toLowerCase()).not.toContain('transfer-encoding');
      expect(body).toBe('GET /old ');
    } finally {
      c.socket.destroy();
    }
  });
});
