/**
 * Regression: an HTTP/2 client's response from an HTTP/1.1 upstream that repeats an identical
 * `Content-Length` (RFC 9110 §8.6 lets a recipient accept it) made node:http2 throw out of the
 * upstream socket's data handler — an uncaught exception in the proxy. The proxy now sends one
 * `content-length`, the length it framed the body by, and the body arrives intact.
 */
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { nextLoopbackAddress } from '../support/loopback-pods.js';
import { startProxy } from './helpers.js';

const BODY = 'hello, one length';
let backend: net.Server;
let proxy: ProxyServer;

beforeAll(async () => {
  // A raw HTTP/1.1 backend: every request gets a 200 with Content-Length written twice.
  backend = net.createServer((socket) => {
    let buffered = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      while (buffered.includes('\r\n\r\n')) {
        buffered = buffered.slice(buffered.indexOf('\r\n\r\n') + 4);
        socket.write(
          `HTTP/1.1 200 OK\r\ncontent-length: ${BODY.length}\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`,
        );
      }
    });
    socket.on('error', () => {});
  });
  const address = nextLoopbackAddress();
  await new Promise<void>((resolve) => backend.listen(0, address, resolve));
  const port = (backend.address() as AddressInfo).port;
  proxy = await startProxy({
    listeners: [{ name: 'main', address: '127.0.0.1:0' }],
    clusters: [{ name: 'b', target: `static:///${address}:${port}` }],
    routes: [{ hosts: ['b.test'], cluster: 'b' }],
  });
});

afterAll(async () => {
  await proxy.close();
  await new Promise<void>((resolve) => backend.close(() => resolve()));
});

it('an upstream repeating Content-Length reaches an h2 client with one content-length and the body intact', async () => {
  const session = http2.connect(`http://127.0.0.1:${proxy.listenerPort('main') as number}`);
  try {
    for (let i = 0; i < 3; i++) {
      const answer = await new Promise<{ status: number; length: unknown; body: string }>((resolve, reject) => {
        const req = session.request({ ':path': `/dup-${i}`, ':authority': 'b.test' });
        let status = 0;
        let length: unknown;
        let body = '';
        req.setEncoding('utf8');
        req.on('response', (h) => {
          status = Number(h[':status']);
          length = h['content-length'];
        });
        req.on('data', (c: string) => (body += c));
        req.on('error', reject);
        req.on('end', () => resolve({ status, length, body }));
      });
      expect(answer).toEqual({ status: 200, length: String(BODY.length), body: BODY });
    }
  } finally {
    session.close();
  }
});
