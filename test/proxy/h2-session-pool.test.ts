/**
 * `H2SessionPool` against real node:http2 servers, as the transport it is (the cluster picks
 * and retries): streams to one endpoint share a session; the shared `LifetimePolicy` retires a
 * session after `maxRequestsPerConnection` streams (a new one opens, the old one closes once
 * its streams end); the peer's `maxConcurrentStreams` opens another session; an endpoint that
 * leaves the eligible set is drained (its open stream finishes, the next stream gets a new
 * session once it is back); a refused connect answers `ready: false`.
 */
import http2 from 'node:http2';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint, type Endpoint } from '../../src/core/endpoint.js';
import { SeededRandom } from '../../src/core/random.js';
import { LifetimePolicy } from '../../src/pool/lifetime-policy.js';
import { type H2SessionLease, H2SessionPool } from '../../src/proxy/h2/h2-session-pool.js';

interface H2Backend {
  readonly name: string;
  readonly address: string;
  readonly port: number;
  readonly server: http2.Http2Server;
  streams: number;
  sessions: number;
}

async function h2Backend(name: string, address: string): Promise<H2Backend> {
  const server = http2.createServer();
  const b: H2Backend = { name, address, port: 0, server, streams: 0, sessions: 0 };
  server.on('session', () => b.sessions++);
  server.on('stream', (stream) => {
    b.streams++;
    stream.respond({ ':status': 200 });
    stream.end(name);
  });
  await new Promise<void>((r) => server.listen(0, address, r));
  Object.assign(b, { port: (server.address() as net.AddressInfo).port });
  return b;
}

async function send(lease: H2SessionLease): Promise<string> {
  if (!(await lease.ready)) throw new Error(`connect to ${lease.endpointKey} failed`);
  return new Promise((resolve, reject) => {
    const req = lease.session.request({ ':path': '/' }, { endStream: true });
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      lease.release();
      resolve(body);
    });
    req.on('error', (e) => {
      lease.release();
      reject(e);
    });
  });
}

let backends: H2Backend[] = [];

beforeAll(async () => {
  backends = await Promise.all([1, 2].map((i) => h2Backend(`h${i}`, `127.0.0.${130 + i}`)));
});

afterAll(async () => {
  for (const b of backends) b.server.close();
});

const endpointOf = (b: H2Backend): Endpoint => createEndpoint({ address: b.address, port: b.port });

describe('H2SessionPool', () => {
  it('shares a session per endpoint and retires it after maxRequestsPerConnection streams', async () => {
    for (const b of backends) {
      b.streams = 0;
      b.sessions = 0;
    }
    const pool = new H2SessionPool({
      lifetime: new LifetimePolicy({ maxRequestsPerConnection: 5 }, new SeededRandom(1)),
      connectTimeoutMs: 2000,
    });
    const answers: string[] = [];
    for (let i = 0; i < 20; i++) answers.push(await send(pool.connectionFor(endpointOf(backends[i % 2] as H2Backend))));
    expect(answers.filter((x) => x === 'h1')).toHaveLength(10);
    expect(answers.filter((x) => x === 'h2')).toHaveLength(10);
    // 10 streams per endpoint, 5 per session: 2 sessions each.
    expect(pool.opened).toBe(4);
    expect(backends.map((b) => b.sessions)).toEqual([2, 2]);
    await pool.close();
  });

  it("opens another session when the peer's maxConcurrentStreams is reached", async () => {
    const server = http2.createServer({ settings: { maxConcurrentStreams: 2 } });
    const held: http2.ServerHttp2Stream[] = [];
    server.on('stream', (stream) => {
      stream.respond({ ':status': 200 });
      held.push(stream);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.141', r));
    const endpoint = createEndpoint({ address: '127.0.0.141', port: (server.address() as net.AddressInfo).port });
    const pool = new H2SessionPool({ lifetime: new LifetimePolicy({}, new SeededRandom(1)), connectTimeoutMs: 2000 });
    const first = pool.connectionFor(endpoint);
    expect(await first.ready).toBe(true);
    // Once the peer's SETTINGS have arrived, two places fit on the first session.
    for (let i = 0; i < 500 && first.session.remoteSettings?.maxConcurrentStreams !== 2; i++) {
      await new Promise((r) => setTimeout(r, 2));
    }
    expect(first.session.remoteSettings?.maxConcurrentStreams).toBe(2);
    const second = pool.connectionFor(endpoint);
    const third = pool.connectionFor(endpoint);
    expect(second.session === first.session).toBe(true);
    expect(third.session === first.session).toBe(false);
    expect(await third.ready).toBe(true);
    expect(pool.opened).toBe(2);
    for (const l of [first, second, third]) l.release();
    for (const s of held) s.close();
    await pool.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('drains an endpoint that leaves the eligible set: its open stream finishes, new streams get a new session', async () => {
    let publish: (eligible: ReadonlySet<string>) => void = () => {};
    const pool = new H2SessionPool({
      lifetime: new LifetimePolicy({}, new SeededRandom(1)),
      connectTimeoutMs: 2000,
      onEligibleChange: (listener) => {
        publish = listener;
        return () => {
          publish = () => {};
        };
      },
    });
    const endpoint = endpointOf(backends[0] as H2Backend);
    const open = pool.connectionFor(endpoint);
    expect(await open.ready).toBe(true);
    const closed = new Promise<void>((r) => open.session.once('close', () => r()));
    publish(new Set([endpointOf(backends[1] as H2Backend).key]));
    // Still in use: the stream finishes on the drained session, which then closes.
    expect(await send(open)).toBe('h1');
    await closed;
    const next = pool.connectionFor(endpoint);
    expect(next.session === open.session).toBe(false);
    expect(await send(next)).toBe('h1');
    await pool.close();
  });

  it("answers ready: false for a refused connect (the caller's attempt retries elsewhere)", async () => {
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.139', r));
    const deadPort = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const pool = new H2SessionPool({ lifetime: new LifetimePolicy({}, new SeededRandom(1)), connectTimeoutMs: 2000 });
    const lease = pool.connectionFor(createEndpoint({ address: '127.0.0.139', port: deadPort }));
    expect(await lease.ready).toBe(false);
    lease.release();
    await pool.destroy();
  });
});
