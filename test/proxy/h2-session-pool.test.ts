/**
 * `H2SessionPool` against real node:http2 servers: streams are balanced one by one over the
 * endpoints while sharing one session per endpoint; the shared `LifetimePolicy` retires a
 * session after `maxRequestsPerConnection` streams (a new one opens, the old one closes once
 * its streams end); a refused connect moves on to another endpoint; and no eligible endpoint
 * gives a `none` result with the balancer's reason.
 */
import http2 from 'node:http2';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Balancer } from '../../src/balancing/balancer.js';
import type { EndpointInput } from '../../src/core/endpoint.js';
import { EndpointSet } from '../../src/core/endpoint-set.js';
import { SeededRandom } from '../../src/core/random.js';
import { type H2Lease, H2SessionPool } from '../../src/pool/h2-session-pool.js';
import { LifetimePolicy } from '../../src/pool/lifetime-policy.js';

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

function send(lease: H2Lease): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = lease.session.request({ ':path': '/' }, { endStream: true });
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      lease.done(true);
      resolve(body);
    });
    req.on('error', (e) => {
      lease.done(false);
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

function balancerFor(endpoints: EndpointInput[]): Balancer {
  const balancer = new Balancer({ policy: 'round-robin', random: new SeededRandom(7) });
  balancer.update(EndpointSet.from(endpoints));
  return balancer;
}

describe('H2SessionPool', () => {
  it('balances streams one by one and retires sessions after maxRequestsPerConnection streams', async () => {
    for (const b of backends) {
      b.streams = 0;
      b.sessions = 0;
    }
    const balancer = balancerFor(backends);
    const pool = new H2SessionPool({
      balancer,
      lifetime: new LifetimePolicy({ maxRequestsPerConnection: 5 }, new SeededRandom(1)),
      connectTimeoutMs: 2000,
      connectRetries: 1,
    });
    const answers: string[] = [];
    for (let i = 0; i < 20; i++) {
      const a = await pool.acquire({});
      if (a.type !== 'lease') throw new Error(a.reason);
      answers.push(await send(a.lease));
    }
    expect(answers.filter((x) => x === 'h1')).toHaveLength(10);
    expect(answers.filter((x) => x === 'h2')).toHaveLength(10);
    // 10 streams per endpoint, 5 per session: 2 sessions each.
    expect(pool.opened).toBe(4);
    expect(backends.map((b) => b.sessions)).toEqual([2, 2]);
    await pool.close();
  });

  it('tries another endpoint when a connect is refused', async () => {
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.139', r));
    const deadPort = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const balancer = balancerFor([{ address: '127.0.0.139', port: deadPort }, backends[0] as H2Backend]);
    const pool = new H2SessionPool({
      balancer,
      lifetime: new LifetimePolicy({}, new SeededRandom(1)),
      connectTimeoutMs: 2000,
      connectRetries: 1,
    });
    for (let i = 0; i < 4; i++) {
      const a = await pool.acquire({});
      if (a.type !== 'lease') throw new Error(a.reason);
      expect(await send(a.lease)).toBe('h1');
    }
    expect(balancer.loads.peek(`127.0.0.139:${deadPort}`)?.errors).toBeGreaterThan(0);
    await pool.destroy();
  });

  it('reports why nothing can be picked', async () => {
    const balancer = balancerFor([{ address: '127.0.0.140', port: 1, conditions: { ready: false, serving: false } }]);
    const pool = new H2SessionPool({
      balancer,
      lifetime: new LifetimePolicy({}, new SeededRandom(1)),
      connectTimeoutMs: 500,
      connectRetries: 0,
    });
    const a = await pool.acquire({});
    expect(a.type).toBe('none');
    if (a.type === 'none') expect(a.reason).toBe('none-ready');
    await pool.close();
  });
});
