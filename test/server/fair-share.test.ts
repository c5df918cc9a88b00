/**
 * Fair-share shedding on real sockets: four HTTP/1.1 pods on their own loopback addresses,
 * peers from a static:/// target, twelve pinned keep-alive clients behind a kube-proxy-like
 * front (a reconnecting client lands on a random pod, seeded). Placed 6/3/2/1 on purpose, the
 * pods even out without a failed request; a pod at the fair share closes nothing.
 */
import http from 'node:http';
import net from 'node:net';
import { Client } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.js';
import { type ConnectionRecycler, recycleConnections } from '../../src/server/index.js';
import { RandomFront } from './support/random-front.js';
import { listen, shutdown, waitFor } from './support/servers.js';

const INTERVAL_MS = 40; // 25 requests/s per client
const TOLERANCE = 0.1;

interface Pod {
  readonly address: string;
  readonly server: http.Server;
  port: number;
  requests: number;
  recycler?: ConnectionRecycler;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startPods(addresses: readonly string[]): Promise<Pod[]> {
  const pods: Pod[] = [];
  for (const address of addresses) {
    const pod: Pod = {
      address,
      port: 0,
      requests: 0,
      server: http.createServer((req, res) => {
        pod.requests++;
        req.resume();
        res.end('ok');
      }),
    };
    pod.server.keepAliveTimeout = 60_000;
    pod.port = await listen(pod.server, address);
    cleanups.push(() => shutdown(pod.server));
    pods.push(pod);
  }
  return pods;
}

class Warnings {
  readonly messages: string[] = [];
  warn(_fields: Record<string, unknown>, message: string): void {
    this.messages.push(message);
  }
}

/** Clients each sending one request every INTERVAL_MS over one keep-alive connection. */
function startClients(url: string, n: number) {
  let running = true;
  const stats = { ok: 0, failed: 0, errors: [] as string[] };
  const clients = Array.from({ length: n }, () => new Client(url, { keepAliveTimeout: 60_000, pipelining: 1 }));
  const one = async (c: Client): Promise<void> => {
    try {
      const res = await c.request({ path: '/', method: 'GET' });
      await res.body.text();
      if (res.statusCode === 200) stats.ok++;
      else stats.failed++;
    } catch (err) {
      stats.failed++;
      stats.errors.push(`${String((err as { code?: string }).code)} ${(err as Error).message}`);
    }
  };
  const loops: Promise<void>[] = [];
  return {
    stats,
    /** Opens the connections one after another (so the front places them in order), then loops. */
    async start(): Promise<void> {
      for (const c of clients) await one(c);
      for (const c of clients) {
        loops.push(
          (async () => {
            while (running) {
              await one(c);
              await new Promise((r) => setTimeout(r, INTERVAL_MS));
            }
          })(),
        );
      }
    },
    async stop(): Promise<void> {
      if (!running) return;
      running = false;
      await Promise.all(loops);
      await Promise.all(clients.map((c) => c.close()));
    },
  };
}

/** Requests per pod over `ms` of real time. */
async function rates(pods: readonly Pod[], ms: number): Promise<number[]> {
  const before = pods.map((p) => p.requests);
  await new Promise((r) => setTimeout(r, ms));
  return pods.map((p, i) => ((p.requests - (before[i] as number)) * 1000) / ms);
}

const spread = (r: readonly number[]): number => {
  const mean = r.reduce((a, b) => a + b, 0) / r.length;
  return Math.max(...r.map((x) => Math.abs(x - mean) / mean));
};

describe('recycleConnections({ fairShare })', () => {
  it('evens out 12 pinned clients placed 6/3/2/1 over 4 pods within 10 s, without a failed request', async () => {
    const pods = await startPods(['127.0.0.11', '127.0.0.12', '127.0.0.13', '127.0.0.14']);
    const peers = `static:///${pods.map((p) => `${p.address}:${p.port}`).join(',')}`;
    const warnings = new Warnings();
    pods.forEach((p, i) => {
      p.recycler = recycleConnections(p.server, {
        random: new SeededRandom(100 + i),
        fairShare: {
          peers,
          self: p.address,
          tolerance: TOLERANCE,
          periodMs: 250,
          windowMs: 1000,
          warmupMs: 2000,
          maxShedFraction: 0.5,
          logger: warnings,
        },
      });
      const r = p.recycler;
      cleanups.push(() => r.close());
    });
    const front = new RandomFront(
      pods.map((p) => ({ host: p.address, port: p.port })),
      7,
      [0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 3],
    );
    const frontPort = await front.listen();
    cleanups.push(() => front.close());
    const clients = startClients(`http://127.0.0.1:${frontPort}`, 12);
    cleanups.push(() => clients.stop());
    await clients.start();
    expect(front.placed).toEqual([6, 3, 2, 1]);
    const before = await rates(pods, 1000);
    expect(spread(before)).toBeGreaterThan(0.5);

    // Converged: three connections on every pod; then every pod within 15% of the mean over 2 s.
    const started = Date.now();
    let last: number[] = [];
    await waitFor(() => front.live.every((n) => n === 3), 10_000, 'three connections on every pod');
    last = await rates(pods, 2000);
    const convergedMs = Date.now() - started;
    await clients.stop();

    expect(spread(last), `rates ${last.join(', ')}`).toBeLessThanOrEqual(0.15);
    expect(convergedMs).toBeLessThan(11_500);
    expect(clients.stats.failed, clients.stats.errors.join(', ')).toBe(0);
    expect(clients.stats.ok).toBeGreaterThan(500);
    const stats = pods.map((p) => p.recycler?.fairShare());
    const shed = pods.map((p) => p.recycler?.stats().closed['fair-share'] ?? 0);
    // The overloaded pod shed; a pod never above the mean closed nothing. (Above the mean but
    // within the tolerance a pod sheds only while a peer is far below the mean: the filling rule.)
    expect(shed[0]).toBeGreaterThan(0);
    pods.forEach((_, i) => {
      const s = stats[i];
      if ((s?.maxShare ?? 0) <= 1) expect(shed[i], `pod ${i} never above the mean`).toBe(0);
    });
    // The pod placed at the fair share (3 of 12) closed nothing unless reconnects pushed it over the mean.
    if ((stats[1]?.maxShare ?? 0) <= 1) expect(shed[1]).toBe(0);
    expect(warnings.messages).toEqual([]);
  }, 30_000);

  it('sheds nothing when no peer answers (unreachable, or not speaking the exchange), and says so', async () => {
    const [pod] = await startPods(['127.0.0.21']);
    const p = pod as Pod;
    // A port nobody listens on, and an HTTP server that does not speak the load exchange.
    const closed = http.createServer();
    const closedPort = await listen(closed, '127.0.0.22');
    await shutdown(closed);
    const other = http.createServer((_req, res) => res.writeHead(404).end('not here'));
    const otherPort = await listen(other, '127.0.0.23');
    cleanups.push(() => shutdown(other));
    const warnings = new Warnings();
    p.recycler = recycleConnections(p.server, {
      fairShare: {
        peers: `static:///127.0.0.21:${p.port},127.0.0.22:${closedPort},127.0.0.23:${otherPort}`,
        self: p.address,
        periodMs: 100,
        windowMs: 300,
        warmupMs: 0,
        peerTimeoutMs: 200,
        logger: warnings,
      },
    });
    const r = p.recycler;
    cleanups.push(() => r.close());
    const clients = startClients(`http://127.0.0.21:${p.port}`, 4);
    cleanups.push(() => clients.stop());
    await clients.start();
    await waitFor(() => (r.fairShare()?.decisions['no-peers'] ?? 0) >= 5, 10_000, 'five no-peers decisions');
    await clients.stop();
    const s = r.fairShare();
    expect(s?.shed).toBe(0);
    expect(r.stats().closed['fair-share']).toBe(0);
    expect(s?.peersAnswering).toBe(0);
    expect(s?.peerFailures).toBeGreaterThanOrEqual(10);
    expect(clients.stats.failed).toBe(0);
    // One clear warning (repeated at most once a minute), naming what failed.
    expect(warnings.messages).toHaveLength(1);
    expect(warnings.messages[0]).toMatch(/no peer answered the load exchange.*not shedding/);
  }, 20_000);

  it('serves the load document on the server port without reaching the application', async () => {
    const [pod] = await startPods(['127.0.0.31']);
    const p = pod as Pod;
    p.recycler = recycleConnections(p.server, {
      fairShare: { peers: `static:///127.0.0.31:${p.port}`, self: p.address },
    });
    const r = p.recycler;
    cleanups.push(() => r.close());
    const res = await fetch(`http://127.0.0.31:${p.port}/.well-known/evenlb/load`);
    expect(await res.json()).toEqual({
      protocol: 'evenlb-load/1',
      metric: 'requests-per-second',
      load: 0,
      windowMs: 2000,
    });
    expect(p.requests).toBe(0);
  });

  it('regression: the connections metric counts only connections that carried a request (not load questions, not idle sockets)', async () => {
    const [pod] = await startPods(['127.0.0.32']);
    const p = pod as Pod;
    p.recycler = recycleConnections(p.server, {
      fairShare: { peers: `static:///127.0.0.32:${p.port}`, self: p.address, loadMetric: 'connections' },
    });
    const r = p.recycler;
    cleanups.push(() => r.close());
    const url = `http://127.0.0.32:${p.port}`;
    const clients = [new Client(url), new Client(url)];
    cleanups.push(() => Promise.all(clients.map((c) => c.close())).then(() => undefined));
    for (const c of clients) await (await c.request({ path: '/', method: 'GET' })).body.text();
    // A socket that never sends a request, and the load question's own connection.
    const idle = net.connect(p.port, '127.0.0.32');
    cleanups.push(() => void idle.destroy());
    await new Promise((resolve) => idle.once('connect', resolve));
    await waitFor(() => r.stats().open >= 3, 5000, 'three open sockets');
    const res = await fetch(`${url}/.well-known/evenlb/load`);
    expect(await res.json()).toMatchObject({ metric: 'connections', load: 2 });
    expect(p.requests).toBe(2);
  });

  it('requires loadPort on an HTTP/2 server', async () => {
    const http2 = await import('node:http2');
    const server = http2.createServer();
    expect(() => recycleConnections(server, { fairShare: { peers: 'static:///127.0.0.1:1' } })).toThrow(
      /fairShare.loadPort/,
    );
  });
});

describe('recycleConnections({ fairShare }) on HTTP/2', () => {
  it('sheds h2c sessions with GOAWAY until two pods share four sessions, no stream failing', async () => {
    const http2 = await import('node:http2');
    const net = await import('node:net');
    const { RetryingH2Client } = await import('./support/h2-client.js');
    const addresses = ['127.0.0.41', '127.0.0.42'];
    // One load-exchange port, free on the first address; each pod binds it on its own address.
    const probe = net.createServer();
    const loadPort = await listen(probe, addresses[0]);
    await new Promise<void>((r) => probe.close(() => r()));
    const counts = [0, 0];
    const servers = addresses.map((_, i) =>
      http2.createServer((_req, res) => {
        counts[i] = (counts[i] ?? 0) + 1;
        res.end('ok');
      }),
    );
    const ports: number[] = [];
    for (const [i, s] of servers.entries()) {
      ports.push(await listen(s, addresses[i]));
      cleanups.push(() => shutdown(s));
    }
    const peers = `static:///${addresses.map((a, i) => `${a}:${ports[i]}`).join(',')}`;
    const recyclers = servers.map((s, i) =>
      recycleConnections(s, {
        random: new SeededRandom(i + 1),
        fairShare: {
          peers,
          self: addresses[i],
          loadPort,
          loadHost: addresses[i],
          periodMs: 200,
          windowMs: 800,
          warmupMs: 800,
        },
      }),
    );
    for (const r of recyclers) cleanups.push(() => r.close());
    const front = new RandomFront(
      addresses.map((a, i) => ({ host: a, port: ports[i] as number })),
      11,
      [0, 0, 0, 0],
    );
    const frontPort = await front.listen();
    cleanups.push(() => front.close());
    const clients = Array.from({ length: 4 }, () => new RetryingH2Client(`http://127.0.0.1:${frontPort}`));
    let running = true;
    let failed = 0;
    const loops = clients.map(async (c) => {
      while (running) {
        try {
          const res = await c.get('/');
          if (res.status !== 200) failed++;
        } catch {
          failed++;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    });
    try {
      // Sessions the servers hold (the load exchange runs on its own port, not counted here).
      await waitFor(() => recyclers.every((r) => r.stats().open === 2), 10_000, 'two sessions on each pod');
    } finally {
      running = false;
      await Promise.all(loops);
      await Promise.all(clients.map((c) => c.close()));
    }
    expect(failed).toBe(0);
    expect(recyclers[0]?.stats().closed['fair-share']).toBeGreaterThan(0);
    expect(counts[1]).toBeGreaterThan(0);
  }, 30_000);
});
