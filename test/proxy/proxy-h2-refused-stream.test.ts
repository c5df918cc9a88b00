/**
 * A stream an `h2` upstream refused unprocessed is sent again, through the cluster's one retry
 * policy (a connect failure: nothing was processed, so any method may go again, under
 * `retries.connectFailures`): refused by RST_STREAM REFUSED_STREAM, or by a GOAWAY whose last
 * stream id is below it (a stream already sent is reset REFUSED_STREAM, a session that got the
 * GOAWAY first takes no new stream) — for HTTP/1.1, HTTP/1.0, h2c and gRPC clients. A request body is
 * replayed when all of it is still held (up to `retryBufferBytes`); a longer one is not, and
 * the client gets 502 `upstream-reset`. Real node:http2 upstreams on loopback, round-robin over
 * a refusing endpoint and a live one, outlier detection off so every request can meet the
 * refusing one.
 */
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { startProxy } from './helpers.js';
import { ask, CLIENT_PROTOCOLS } from './protocol-clients.js';

const { NGHTTP2_NO_ERROR, NGHTTP2_REFUSED_STREAM } = http2.constants;
const RETRY_BUFFER_BYTES = 4096;
const REQUESTS = 4;

interface H2Upstream {
  readonly key: string;
  /** Streams it received (the GOAWAY upstream: sessions, one per attempt, as each is refused at once). */
  met: number;
  /** Request body bytes of each stream the live upstream answered. */
  readonly bodies: number[];
  close(): Promise<void>;
}

type Behaviour = 'refuse' | 'refuse-after-body' | 'goaway' | 'live';

async function upstream(address: string, behaviour: Behaviour): Promise<H2Upstream> {
  const server = http2.createServer();
  const sessions = new Set<http2.Http2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
    if (behaviour !== 'goaway') return;
    // Last stream id 0: every stream the client opens is refused, those already sent and any
    // it would open after this frame.
    u.met++;
    s.on('error', () => {});
    s.goaway(NGHTTP2_NO_ERROR, 0);
  });
  const u: H2Upstream = {
    key: '',
    met: 0,
    bodies: [],
    close: async () => {
      for (const s of sessions) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  server.on('stream', (stream, headers) => {
    if (behaviour !== 'goaway') u.met++;
    stream.on('error', () => {});
    if (behaviour === 'refuse') {
      stream.close(NGHTTP2_REFUSED_STREAM);
      return;
    }
    let bytes = 0;
    stream.on('data', (c: Buffer) => (bytes += c.length));
    stream.on('end', () => {
      if (behaviour === 'refuse-after-body') {
        stream.close(NGHTTP2_REFUSED_STREAM);
        return;
      }
      u.bodies.push(bytes);
      if (String(headers['content-type']).startsWith('application/grpc')) {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end();
        return;
      }
      stream.respond({ ':status': 200 });
      stream.end(`live ${bytes}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, address, r));
  return Object.assign(u, { key: `${address}:${(server.address() as AddressInfo).port}` });
}

/** A request with a body, over h2c or HTTP/1.1; its status, body and `x-evenlb-reason`. */
function post(
  protocol: 'h2c' | 'HTTP/1.1',
  port: number,
  host: string,
  body: Buffer,
): Promise<{ status: number; body: string; reason: string | undefined }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${protocol} POST to ${host} did not end within 6 s`)), 6000);
    const done = (status: number, text: string, reason: unknown): void => {
      clearTimeout(timer);
      resolve({ status, body: text, reason: reason === undefined ? undefined : String(reason) });
    };
    if (protocol === 'HTTP/1.1') {
      const req = http.request(
        { host: '127.0.0.1', port, method: 'POST', path: '/', agent: false, headers: { host } },
        (res) => {
          let text = '';
          res.setEncoding('latin1');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => done(res.statusCode ?? 0, text, res.headers['x-evenlb-reason']));
        },
      );
      req.on('error', reject);
      req.end(body);
      return;
    }
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', reject);
    const stream = session.request({ ':method': 'POST', ':path': '/', ':authority': host });
    let status = 0;
    let reason: unknown;
    let text = '';
    stream.on('response', (h) => {
      status = Number(h[':status']);
      reason = h['x-evenlb-reason'];
    });
    stream.setEncoding('latin1');
    stream.on('data', (c: string) => (text += c));
    stream.on('error', reject);
    stream.on('close', () => {
      session.close();
      done(status, text, reason);
    });
    stream.end(body);
  });
}

let proxy: ProxyServer;
let port = 0;
const ups: Record<string, H2Upstream> = {};

beforeAll(async () => {
  ups.refuse = await upstream('127.0.0.141', 'refuse');
  ups.goaway = await upstream('127.0.0.142', 'goaway');
  ups.late = await upstream('127.0.0.143', 'refuse-after-body');
  ups.live = await upstream('127.0.0.144', 'live');
  const cluster = (name: string, refusing: H2Upstream) => ({
    name,
    target: `static:///${refusing.key},${(ups.live as H2Upstream).key}`,
    protocol: 'h2',
    policy: 'round-robin',
    outlierDetection: false,
    retryBufferBytes: RETRY_BUFFER_BYTES,
    retries: { connectFailures: 1, idempotent: 0 },
  });
  proxy = await startProxy({
    listeners: [{ name: 'web', address: '127.0.0.1:0' }],
    clusters: [
      cluster('refuse', ups.refuse as H2Upstream),
      cluster('goaway', ups.goaway as H2Upstream),
      cluster('late', ups.late as H2Upstream),
    ],
    routes: ['refuse', 'goaway', 'late'].map((c) => ({ hosts: [`${c}.test`], cluster: c })),
  });
  port = proxy.listenerPort('web') as number;
});

afterAll(async () => {
  await proxy?.close();
  await Promise.all(Object.values(ups).map((u) => u.close()));
});

describe('h2 cluster: a refused stream is sent again', () => {
  for (const how of ['refuse', 'goaway'] as const) {
    for (const protocol of CLIENT_PROTOCOLS) {
      it(`${protocol}: refused by ${how === 'refuse' ? 'RST_STREAM REFUSED_STREAM' : 'GOAWAY'}, answered by the other endpoint`, async () => {
        const refusing = ups[how] as H2Upstream;
        const before = refusing.met;
        const retriesBefore = proxy.clusters.get(how)?.stats().retries ?? 0;
        const answers = [];
        for (let i = 0; i < REQUESTS; i++) answers.push(await ask(protocol, port, `${how}.test`, `/${protocol}/${i}`));
        const refused = refusing.met - before;
        expect(refused).toBeGreaterThanOrEqual(1);
        for (const a of answers) {
          if (protocol === 'gRPC')
            expect({ status: a.status, grpcStatus: a.grpcStatus }).toEqual({ status: 200, grpcStatus: '0' });
          else expect({ status: a.status, body: a.body }).toEqual({ status: 200, body: 'live 0' });
        }
        // Each refusal is one retry, counted once by the cluster.
        expect((proxy.clusters.get(how)?.stats().retries ?? 0) - retriesBefore).toBe(refused);
      });
    }
  }

  for (const protocol of ['h2c', 'HTTP/1.1'] as const) {
    it(`${protocol}: a body held within retryBufferBytes is replayed; a longer one is not, 502 upstream-reset`, async () => {
      const late = ups.late as H2Upstream;
      const live = ups.live as H2Upstream;
      for (const bytes of [RETRY_BUFFER_BYTES, 4 * RETRY_BUFFER_BYTES]) {
        let met = false;
        for (let i = 0; i < REQUESTS && !met; i++) {
          const before = late.met;
          const liveBefore = live.bodies.length;
          const r = await post(protocol, port, 'late.test', Buffer.alloc(bytes, 0x62));
          met = late.met > before;
          if (!met) continue;
          if (bytes <= RETRY_BUFFER_BYTES) {
            expect({ status: r.status, body: r.body }).toEqual({ status: 200, body: `live ${bytes}` });
          } else {
            expect({ status: r.status, reason: r.reason }).toEqual({ status: 502, reason: 'upstream-reset' });
            expect(live.bodies.length).toBe(liveBefore);
          }
        }
        expect(met).toBe(true);
      }
    });
  }
});
