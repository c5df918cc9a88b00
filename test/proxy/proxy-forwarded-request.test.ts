/**
 * HTTP/2 clients of an HTTP/1.1 cluster, forwarded over the proxy's HTTP/1.1 sockets by the one
 * HTTP/1.1 exchange (`Http1Exchange`): request bodies framed by the declared length or chunked,
 * a large chunked response de-chunked intact, the response head deadline (`requestTimeoutMs`,
 * 504) and the body idle deadline (`bodyTimeoutMs`, the stream is reset).
 */
import { createHash } from 'node:crypto';
import type http from 'node:http';
import http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { type Backend, startBackend, startProxy } from './helpers.js';

const BIG = Buffer.alloc(1024 * 1024 + 17, 'x');
let backend: Backend;
let proxy: ProxyServer;
let session: http2.ClientHttp2Session;
let seen: { framing: string; bodyHash: string } | undefined;

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  backend = await startBackend('f1', '127.0.0.211', {
    handler: (req: http.IncomingMessage, res: http.ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        seen = {
          framing: req.headers['transfer-encoding'] ?? `length ${req.headers['content-length'] ?? 'none'}`,
          bodyHash: sha(body),
        };
        if (req.url === '/big') {
          res.writeHead(200);
          for (let i = 0; i < BIG.length; i += 65536) res.write(BIG.subarray(i, i + 65536));
          res.end();
        } else if (req.url === '/silent') {
          // never answers
        } else if (req.url === '/stall') {
          res.writeHead(200);
          res.write('first');
        } else res.end(`got ${body.length}`);
      });
    },
  });
  proxy = await startProxy({
    listeners: [{ name: 'main', address: '127.0.0.1:0' }],
    clusters: [{ name: 'f', target: `static:///${backend.key}`, requestTimeoutMs: 400, bodyTimeoutMs: 400 }],
    routes: [{ hosts: ['f.test'], cluster: 'f' }],
  });
  session = http2.connect(`http://127.0.0.1:${proxy.listenerPort('main') as number}`);
});

afterAll(async () => {
  session.close();
  await proxy.close();
  backend.server.closeAllConnections();
  await backend.close();
});

function call(
  path: string,
  body?: Buffer,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Buffer; error?: string }> {
  return new Promise((resolve) => {
    const req = session.request({
      ':path': path,
      ':authority': 'f.test',
      ':method': body ? 'POST' : 'GET',
      ...headers,
    });
    let status = 0;
    const chunks: Buffer[] = [];
    req.on('response', (h) => {
      status = Number(h[':status']);
    });
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve({ status, body: Buffer.concat(chunks) }));
    req.on('error', (e: Error) => resolve({ status, body: Buffer.concat(chunks), error: e.message }));
    if (body) req.end(body);
    else req.end();
  });
}

describe('HTTP/2 clients of an HTTP/1.1 cluster', () => {
  it('sends a body without a declared length chunked, and with one by that length', async () => {
    const body = Buffer.alloc(200_000, 'b');
    const chunked = await call('/echo', body);
    expect(chunked).toMatchObject({ status: 200 });
    expect(chunked.body.toString()).toBe('got 200000');
    expect(seen).toEqual({ framing: 'chunked', bodyHash: sha(body) });
    const sized = await call('/echo', body, { 'content-length': String(body.length) });
    expect(sized.body.toString()).toBe('got 200000');
    expect(seen).toEqual({ framing: 'length 200000', bodyHash: sha(body) });
  });

  it('relays a 1 MiB chunked response de-chunked and intact', async () => {
    const r = await call('/big');
    expect(r.status).toBe(200);
    expect(r.body.length).toBe(BIG.length);
    expect(sha(r.body)).toBe(sha(BIG));
  });

  it('answers 504 when the upstream sends no head within requestTimeoutMs', async () => {
    const r = await call('/silent');
    expect(r.status).toBe(504);
  });

  it('resets the stream when the upstream body stalls past bodyTimeoutMs', async () => {
    const r = await call('/stall');
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('first');
    expect(r.error).toBeDefined();
  });
});
