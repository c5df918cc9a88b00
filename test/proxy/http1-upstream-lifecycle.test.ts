/**
 * `Http1Upstream`, the proxy's one HTTP/1.1 transport per cluster, under the shared
 * close/destroy contract and on a `ManualClock` (its idle sweep runs only when the test
 * advances time), with real sockets to real servers:
 *
 * - `close()` lets a busy socket finish its response, closes idle ones, then settles; a second
 *   call returns the same promise;
 * - `destroy()` while a `close()` waits on a hung upstream settles both;
 * - `drainEndpoint` closes the endpoint's idle sockets at once and gives the next request a new pool;
 * - an idle socket is closed by the sweep once past the idle limit (4 s by default).
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { Cluster } from '../../src/cluster/cluster.js';
import { clusterInternals } from '../../src/cluster/cluster-internals.js';
import { ManualClock } from '../../src/core/clock.js';
import type { Endpoint } from '../../src/core/endpoint.js';
import { SeededRandom } from '../../src/core/random.js';
import { StaticEndpointSource } from '../../src/discovery/static-endpoint-source.js';
import { LifetimePolicy } from '../../src/pool/lifetime-policy.js';
import type { ResponseHead } from '../../src/proxy/http1/message-head.js';
import { Http1Upstream, type ResponseSink, type UpstreamConnection } from '../../src/proxy/http1/upstream-pool.js';
import { nextLoopbackAddress } from '../support/loopback-pods.js';

interface Server {
  readonly endpoint: { address: string; port: number };
  open: number;
  close(): Promise<void>;
}

/** `/hang` never answers; anything else gets 200 at once. */
async function startServer(): Promise<Server> {
  const address = nextLoopbackAddress();
  const sockets = new Set<Socket>();
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    req.resume();
    if (req.url !== '/hang') res.end('ok');
  });
  const s: Server = {
    endpoint: { address, port: 0 },
    open: 0,
    close: async () => {
      for (const sock of sockets) sock.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  server.on('connection', (sock: Socket) => {
    s.open++;
    sockets.add(sock);
    sock.once('close', () => {
      s.open--;
      sockets.delete(sock);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  Object.assign(s.endpoint, { port: (server.address() as AddressInfo).port });
  return s;
}

/** A sink that records what happened to one request. */
function sink(): ResponseSink & { events: string[]; ended: Promise<string> } {
  let settle: (v: string) => void = () => {};
  const ended = new Promise<string>((resolve) => {
    settle = resolve;
  });
  const events: string[] = [];
  const s = {
    events,
    ended,
    conn: undefined as UpstreamConnection | undefined,
    onConnection(conn: UpstreamConnection | Error) {
      if (conn instanceof Error) {
        events.push(`error ${conn.message}`);
        settle('error');
        return;
      }
      s.conn = conn;
    },
    onResponseHead: (head: ResponseHead) => events.push(`head ${head.status}`),
    onResponseBody: () => {},
    onUpgrade: () => {},
    onResponseEnd: () => settle('end'),
    onUpstreamError: (err: Error) => {
      events.push(`failed ${err.message}`);
      settle('failed');
    },
    flush: () => {},
  };
  return s;
}

function send(upstream: Http1Upstream, endpoint: Endpoint, path: string) {
  const s = sink();
  const write = (conn: UpstreamConnection) => {
    conn.send(s, `GET ${path} HTTP/1.1\r\nhost: t\r\n\r\n`, false);
    conn.requestSent = true; // a bodiless request is sent with its head
  };
  const onConnection = s.onConnection;
  s.onConnection = (conn) => {
    onConnection(conn);
    if (!(conn instanceof Error)) write(conn);
  };
  const conn = upstream.connectionFor(endpoint).acquire(s);
  if (conn !== undefined) write(conn);
  return s;
}

async function setup() {
  const server = await startServer();
  const clock = new ManualClock();
  const random = new SeededRandom(3);
  const cluster = new Cluster({
    name: 'svc',
    target: new StaticEndpointSource([server.endpoint]),
    outlierDetection: false,
    clock,
    random,
  });
  const upstream = new Http1Upstream(cluster, {
    lifetime: new LifetimePolicy({}, random),
    clock,
    connectTimeoutMs: 2000,
    maxConnections: undefined,
  });
  const endpoint = clusterInternals(cluster).balancer.picker.endpoints[0]?.endpoint as Endpoint;
  return { server, clock, cluster, upstream, endpoint };
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
}

describe('Http1Upstream lifecycle', () => {
  const stop: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const s of stop.splice(0).reverse()) await s();
  });

  test('close() lets the busy socket finish, closes the idle one, settles once; idempotent', async () => {
    const { server, cluster, upstream, endpoint } = await setup();
    stop.push(
      () => server.close(),
      () => cluster.destroy(),
    );
    expect(await send(upstream, endpoint, '/a').ended).toBe('end');
    const busy = send(upstream, endpoint, '/a');
    const busy2 = send(upstream, endpoint, '/a');
    await until(() => server.open === 2, 'two sockets');
    const closing = upstream.close();
    expect(upstream.close()).toBe(closing);
    expect(await busy.ended).toBe('end');
    expect(await busy2.ended).toBe('end');
    await closing;
    await until(() => server.open === 0, 'the sockets to close');
  });

  test('destroy() while close() waits on a hung upstream settles both', async () => {
    const { server, cluster, upstream, endpoint } = await setup();
    stop.push(
      () => server.close(),
      () => cluster.destroy(),
    );
    const hung = send(upstream, endpoint, '/hang');
    await until(() => server.open === 1, 'the socket');
    let closed = false;
    const closing = upstream.close().then(() => {
      closed = true;
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(closed).toBe(false);
    await upstream.destroy();
    await closing;
    expect(await hung.ended).toBe('failed');
    expect(upstream.destroy()).toBe(upstream.destroy());
  });

  test('drainEndpoint closes idle sockets at once; the next request gets a new pool', async () => {
    const { server, cluster, upstream, endpoint } = await setup();
    stop.push(
      () => server.close(),
      () => upstream.destroy(),
      () => cluster.destroy(),
    );
    const pool = upstream.connectionFor(endpoint);
    expect(await send(upstream, endpoint, '/a').ended).toBe('end');
    expect(server.open).toBe(1);
    upstream.drainEndpoint(endpoint.key);
    await until(() => server.open === 0, 'the idle socket to close');
    expect(upstream.connectionFor(endpoint)).not.toBe(pool);
  });

  test('the sweep closes an idle socket past the default 4 s idle limit (ManualClock)', async () => {
    const { server, clock, cluster, upstream, endpoint } = await setup();
    stop.push(
      () => server.close(),
      () => upstream.destroy(),
      () => cluster.destroy(),
    );
    expect(await send(upstream, endpoint, '/a').ended).toBe('end');
    clock.advance(3000);
    await new Promise((r) => setTimeout(r, 50));
    expect(server.open).toBe(1);
    clock.advance(2000);
    await until(() => server.open === 0, 'the idle socket to close');
  });
});
