/**
 * HTTP/2 clients of an HTTP/1.1 cluster: a chunked upstream response's trailer section
 * reaches the client as HTTP/2 trailers; responses without trailers end normally.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { type Backend, h2Exchange, startBackend, startProxy } from './helpers.js';

let backend: Backend;
let proxy: ProxyServer;
let port = 0;

beforeAll(async () => {
  backend = await startBackend('t1', '127.0.0.191', {
    handler: (req, res) => {
      req.resume();
      if (req.url === '/trailers') {
        res.writeHead(200, { 'content-type': 'text/plain', trailer: 'x-checksum' });
        res.write('part one, ');
        res.addTrailers({ 'x-checksum': 'c0ffee' });
        res.end('part two');
      } else if (req.url === '/chunked') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('no ');
        res.end('trailers');
      } else {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 5 });
        res.end('fixed');
      }
    },
  });
  proxy = await startProxy({
    listeners: [{ name: 'web', address: '127.0.0.1:0' }],
    clusters: [{ name: 'web', target: `static:///${backend.key}` }],
  });
  port = proxy.listenerPort('web') as number;
});

afterAll(async () => {
  await proxy?.close();
  await backend?.close();
});

const get = (path: string) => h2Exchange(port, 'GET', path);

describe('HTTP/2 client, HTTP/1.1 upstream', () => {
  it('relays the upstream trailer section as HTTP/2 trailers', async () => {
    const a = await get('/trailers');
    expect(a.status).toBe(200);
    expect(a.body).toBe('part one, part two');
    expect(a.trailers?.['x-checksum']).toBe('c0ffee');
  });

  it('ends chunked responses without trailers and fixed-length responses normally', async () => {
    const chunked = await get('/chunked');
    expect(chunked.status).toBe(200);
    expect(chunked.body).toBe('no trailers');
    expect(chunked.trailers?.['x-checksum']).toBeUndefined();
    const fixed = await get('/fixed');
    expect(fixed).toEqual({ status: 200, body: 'fixed', trailers: undefined });
  });
});
