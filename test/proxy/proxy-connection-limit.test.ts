/**
 * `clusters[].connectionsPerEndpoint`: the proxy opens at most that many sockets to one
 * endpoint; requests beyond wait for a free socket, in order, and all complete.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { startProxy } from './helpers.js';

let server: http.Server;
let proxy: ProxyServer;
let open = 0;
let maxOpen = 0;
let sockets = 0;
let maxInFlight = 0;
let inFlight = 0;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    req.resume();
    setTimeout(() => {
      inFlight--;
      res.end(req.url);
    }, 100);
  });
  server.on('connection', (s: Socket) => {
    sockets++;
    open++;
    maxOpen = Math.max(maxOpen, open);
    s.once('close', () => open--);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.198', resolve));
  const key = `127.0.0.198:${(server.address() as AddressInfo).port}`;
  proxy = await startProxy({
    listeners: [{ name: 'web', address: '127.0.0.1:0' }],
    clusters: [{ name: 'web', target: `static:///${key}`, connectionsPerEndpoint: 2 }],
  });
});

afterAll(async () => {
  await proxy?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
});

function get(path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port: proxy.listenerPort('web'), path, agent: false, headers: { host: 'svc.test' } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
  });
}

describe('connectionsPerEndpoint', () => {
  it('opens at most 2 sockets to the endpoint; 12 concurrent requests all complete', async () => {
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => get(`/r${i}`)));
    expect(answers.map((a) => a.status)).toEqual(Array(12).fill(200));
    expect(answers.map((a) => a.body)).toEqual(Array.from({ length: 12 }, (_, i) => `/r${i}`));
    expect(maxOpen).toBeLessThanOrEqual(2);
    expect(maxInFlight).toBe(2);
    expect(sockets).toBeLessThanOrEqual(2);
  });
});
