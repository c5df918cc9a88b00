/**
 * Same failure, same answer, whatever the client spoke: HTTP/1.1, HTTP/1.0, h2c and gRPC
 * clients of an HTTP/1.1 cluster and of an `h2` cluster get the same status and the same
 * `x-evenlb-reason` for the same upstream failure — a refused connection, a reset before the
 * response, no response head in time, no endpoint at all, a cluster the proxy closed. gRPC
 * clients get the gRPC form of the same reply (HTTP 200, `grpc-status` from the status).
 *
 * With retries on (`retries.idempotent: 1`), the same holds after a retry: when the first
 * attempt of each request fails — a reset, a 503, no response head in time — and the retry is
 * answered, every GET client gets the retry's 200 from HTTP/1.1 and `h2` clusters alike, and
 * gRPC clients (a POST, not idempotent: never retried on these failures) the first failure.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { type Backend, startBackend, startH2Backend, startProxy } from './helpers.js';
import { ask, CLIENT_PROTOCOLS, type ClientProtocol } from './protocol-clients.js';

const GRPC_OF: Record<number, string> = { 502: '14', 503: '14', 504: '4' };

type Failure = 'refused' | 'reset' | 'timeout' | 'no-endpoints' | 'cluster-closed';
const EXPECTED: Record<Failure, { status: number; reason: string }> = {
  refused: { status: 503, reason: 'connect-failed' },
  reset: { status: 502, reason: 'upstream-reset' },
  timeout: { status: 504, reason: 'upstream-timeout' },
  'no-endpoints': { status: 503, reason: 'no-endpoints' },
  'cluster-closed': { status: 503, reason: 'cluster-closed' },
};

/** Failures of a first attempt that a retry answers. */
type FirstFailure = 'reset' | 'busy' | 'timeout';
const AFTER_RETRY: Record<FirstFailure, Record<ClientProtocol, string>> = {
  reset: { 'HTTP/1.1': '200 -', 'HTTP/1.0': '200 -', h2c: '200 -', gRPC: '200 grpc-status 14 upstream-reset' },
  // The gRPC client's 503 is the upstream's own answer, passed on as it was.
  busy: { 'HTTP/1.1': '200 -', 'HTTP/1.0': '200 -', h2c: '200 -', gRPC: '503 grpc-status - -' },
  timeout: { 'HTTP/1.1': '200 -', 'HTTP/1.0': '200 -', h2c: '200 -', gRPC: '200 grpc-status 4 upstream-timeout' },
};

let proxy: ProxyServer;
let port = 0;
const retryBackends: Backend<http.Server | http2.Http2Server>[] = [];

/**
 * Two endpoints of one cluster that fail the first attempt of each request path (wherever it
 * lands: they share what they have seen) as the path's first segment says, and answer 200 after.
 */
async function failingFirst(h2: boolean, addresses: readonly string[]): Promise<string> {
  const seen = new Set<string>();
  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const path = req.url ?? '/';
    const failure = path.split('/')[1] as FirstFailure;
    if (seen.has(path)) {
      req.resume();
      res.end('ok');
      return;
    }
    seen.add(path);
    if (failure === 'reset') {
      const stream = (res as unknown as http2.Http2ServerResponse).stream as http2.ServerHttp2Stream | undefined;
      if (stream !== undefined) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      else req.socket.destroy();
    } else if (failure === 'busy') {
      res.writeHead(503, { 'retry-after': '7' });
      res.end('busy\n');
    }
    // 'timeout': never answered.
  };
  const started = await Promise.all(
    addresses.map((a, i) =>
      h2 ? startH2Backend(`first-${i}`, a, { handler }) : startBackend(`first-${i}`, a, { handler }),
    ),
  );
  retryBackends.push(...started);
  return `static:///${started.map((b) => b.key).join(',')}`;
}
let dir = '';
const closers: (() => Promise<void>)[] = [];

async function refusedKey(address: string): Promise<string> {
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, address, r));
  const key = `${address}:${(probe.address() as AddressInfo).port}`;
  await new Promise<void>((r) => probe.close(() => r()));
  return key;
}

async function listen(server: net.Server, address: string): Promise<string> {
  await new Promise<void>((r) => server.listen(0, address, r));
  closers.push(
    () =>
      new Promise<void>((r) => {
        server.close(() => r());
        if (server instanceof http.Server) server.closeAllConnections();
      }),
  );
  return `${address}:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'evenlb-failure-table-'));
  const empty = join(dir, 'empty.json');
  writeFileSync(empty, '[]');
  const h1Reset = http.createServer((req) => req.socket.destroy());
  const h1Silent = http.createServer(() => {});
  const h2Reset = http2.createServer();
  h2Reset.on('stream', (s) => {
    // The reset is this backend's own doing: its stream's 'error' is expected, not a failure.
    s.on('error', () => {});
    s.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
  });
  const h2Silent = http2.createServer();
  const hanging = new Set<http2.ServerHttp2Stream>();
  h2Silent.on('stream', (s) => {
    hanging.add(s);
    s.on('error', () => {});
  });
  closers.push(async () => {
    for (const s of hanging) s.destroy();
  });
  const keys = {
    h1Refused: await refusedKey('127.0.0.101'),
    h2Refused: await refusedKey('127.0.0.102'),
    h1Reset: await listen(h1Reset, '127.0.0.103'),
    h2Reset: await listen(h2Reset, '127.0.0.104'),
    h1Silent: await listen(h1Silent, '127.0.0.105'),
    h2Silent: await listen(h2Silent, '127.0.0.106'),
  };
  const retriedTargets = {
    h1: await failingFirst(false, ['127.0.0.151', '127.0.0.152']),
    h2: await failingFirst(true, ['127.0.0.153', '127.0.0.154']),
  };
  const cluster = (name: string, target: string, h2: boolean) => ({
    name,
    target,
    ...(h2 ? { protocol: 'h2' } : {}),
    requestTimeoutMs: 400,
    retries: { idempotent: 0, connectFailures: 0 },
  });
  proxy = await startProxy({
    listeners: [{ name: 'web', address: '127.0.0.1:0' }],
    clusters: [
      cluster('h1-refused', `static:///${keys.h1Refused}`, false),
      cluster('h2-refused', `static:///${keys.h2Refused}`, true),
      cluster('h1-reset', `static:///${keys.h1Reset}`, false),
      cluster('h2-reset', `static:///${keys.h2Reset}`, true),
      cluster('h1-timeout', `static:///${keys.h1Silent}`, false),
      cluster('h2-timeout', `static:///${keys.h2Silent}`, true),
      cluster('h1-no-endpoints', `file://${empty}`, false),
      cluster('h2-no-endpoints', `file://${empty}`, true),
      cluster('h1-cluster-closed', `static:///${keys.h1Silent}`, false),
      cluster('h2-cluster-closed', `static:///${keys.h2Silent}`, true),
      ...[false, true].map((h2) => ({
        ...cluster(h2 ? 'h2-retried' : 'h1-retried', '', h2),
        target: h2 ? retriedTargets.h2 : retriedTargets.h1,
        policy: 'round-robin',
        outlierDetection: false,
        retries: { idempotent: 1, connectFailures: 1 },
      })),
    ],
    routes: [
      ...['h1', 'h2'].flatMap((p) =>
        (Object.keys(EXPECTED) as Failure[]).map((f) => ({ hosts: [`${p}-${f}.test`], cluster: `${p}-${f}` })),
      ),
      { hosts: ['h1-retried.test'], cluster: 'h1-retried' },
      { hosts: ['h2-retried.test'], cluster: 'h2-retried' },
    ],
  });
  port = proxy.listenerPort('web') as number;
  // As a reload retires a cluster that requests still reach.
  await proxy.clusters.get('h1-cluster-closed')?.close();
  await proxy.clusters.get('h2-cluster-closed')?.close();
});

afterAll(async () => {
  await proxy?.close();
  await Promise.all(closers.map((c) => c()));
  await Promise.all(retryBackends.map((b) => b.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe('same failure, same answer on every client path', () => {
  for (const failure of Object.keys(EXPECTED) as Failure[]) {
    for (const upstream of ['h1', 'h2']) {
      it(`${failure}, ${upstream === 'h1' ? 'HTTP/1.1' : 'h2'} cluster`, async () => {
        const want = EXPECTED[failure];
        const got = await Promise.all(CLIENT_PROTOCOLS.map((p) => ask(p, port, `${upstream}-${failure}.test`)));
        const table = Object.fromEntries(
          CLIENT_PROTOCOLS.map((p, i) => {
            const a = got[i] as (typeof got)[number];
            return [p, p === 'gRPC' ? `grpc-status ${a.grpcStatus} ${a.reason}` : `${a.status} ${a.reason}`];
          }),
        );
        expect(table).toEqual({
          'HTTP/1.1': `${want.status} ${want.reason}`,
          'HTTP/1.0': `${want.status} ${want.reason}`,
          h2c: `${want.status} ${want.reason}`,
          gRPC: `grpc-status ${GRPC_OF[want.status]} ${want.reason}`,
        });
      });
    }
  }
});

describe('same failure, same answer after a retry, on HTTP/1.1 and h2 clusters', () => {
  for (const failure of Object.keys(AFTER_RETRY) as FirstFailure[]) {
    for (const upstream of ['h1', 'h2']) {
      it(`first attempt ${failure}, ${upstream === 'h1' ? 'HTTP/1.1' : 'h2'} cluster`, async () => {
        const got = await Promise.all(
          CLIENT_PROTOCOLS.map((p) => ask(p, port, `${upstream}-retried.test`, `/${failure}/${p.replace('/', '')}`)),
        );
        const table = Object.fromEntries(
          CLIENT_PROTOCOLS.map((p, i) => {
            const a = got[i] as (typeof got)[number];
            const tail = `${a.reason ?? '-'}`;
            return [p, p === 'gRPC' ? `${a.status} grpc-status ${a.grpcStatus ?? '-'} ${tail}` : `${a.status} ${tail}`];
          }),
        );
        expect(table).toEqual(AFTER_RETRY[failure]);
      });
    }
  }
});
