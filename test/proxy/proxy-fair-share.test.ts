/**
 * `listeners[].recycle.fairShare` on real sockets: three proxy replicas in-process, each with
 * one listener on its own loopback address and its own backend, peers from a file:/// target,
 * the load exchange on one `loadPort` per replica address. Nine pinned keep-alive clients reach
 * them through a kube-proxy-like front (a reconnecting client lands on a random replica,
 * seeded), placed 5/3/1 on purpose: the replicas even out without a failed request, the one at
 * the mean closes nothing, and the shedding shows on the proxy's /metrics. h2c clients are
 * shed with GOAWAY the same way. The option is validated with the recycler's own spec, errors
 * naming the field.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.js';
import { normalizeProxyConfig } from '../../src/proxy/config/proxy-config.js';
import { ProxyServer } from '../../src/proxy/proxy-server.js';
import { RandomFront } from '../server/support/random-front.js';
import { freePort } from '../support/tracked-server.js';
import { type Backend, fetchText, quietLogger, startBackend, waitFor } from './helpers.js';

const INTERVAL_MS = 40; // 25 requests/s per client
const TOLERANCE = 0.1;
const ADDRESSES = ['127.0.0.61', '127.0.0.62', '127.0.0.63'] as const;
const PLACE = [0, 0, 0, 0, 0, 1, 1, 1, 2]; // 5/3/1: the mean is 3, replica 1 sits at it

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Clients each sending one request every INTERVAL_MS over one keep-alive connection. */
function startClients(url: string, n: number) {
  let running = true;
  const stats = { ok: 0, failed: 0, errors: [] as string[] };
  const clients = Array.from({ length: n }, () => new Client(url, { keepAliveTimeout: 60_000, pipelining: 1 }));
  const one = async (c: Client): Promise<void> => {
    try {
      const res = await c.request({ path: '/', method: 'GET', headers: { host: 'app.test' } });
      await res.body.text();
      if (res.statusCode === 200) stats.ok++;
      else {
        stats.failed++;
        stats.errors.push(`status ${res.statusCode}`);
      }
    } catch (err) {
      stats.failed++;
      stats.errors.push(`${String((err as { code?: string }).code)} ${(err as Error).message}`);
    }
  };
  const loops: Promise<void>[] = [];
  const deadline = Date.now() + 60_000;
  return {
    stats,
    /** Opens the connections one after another (so the front places them in order), then loops. */
    async start(): Promise<void> {
      for (const c of clients) await one(c);
      for (const c of clients) {
        loops.push(
          (async () => {
            while (running && Date.now() < deadline) {
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

const spread = (r: readonly number[]): number => {
  const mean = r.reduce((a, b) => a + b, 0) / r.length;
  return Math.max(...r.map((x) => Math.abs(x - mean) / mean));
};

/** Each backend's share of the next `count` requests (waits for them, bounded). */
async function nextShares(backends: readonly Backend[], count: number): Promise<number[]> {
  const before = backends.map((b) => b.hits);
  const served = () => backends.reduce((a, b, i) => a + b.hits - (before[i] as number), 0);
  await waitFor(() => served() >= count, 20_000, `${count} requests`);
  return backends.map((b, i) => (b.hits - (before[i] as number)) / served());
}

/**
 * Proxy replicas, one per address: a listener on `address:0` shedding by fair share with
 * peers from a file:/// target (empty until `listPeers()`: nobody sheds before), the load
 * exchange on one port bound on each replica's address, and a backend of its own.
 */
async function startReplicas(addresses: readonly string[]) {
  const dir = mkdtempSync(join(tmpdir(), 'evenlb-proxy-fair-share-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const peersFile = join(dir, 'replicas.json');
  writeFileSync(peersFile, '[]');
  const loadPort = await freePort(addresses[0] as string);
  const backends: Backend[] = [];
  for (const [i, address] of addresses.entries()) {
    const b = await startBackend(`b${i}`, address);
    backends.push(b);
    cleanups.push(() => b.close());
  }
  const replicas: ProxyServer[] = [];
  for (const [i, address] of addresses.entries()) {
    const config = normalizeProxyConfig({
      listeners: [
        {
          name: 'web',
          address: `${address}:0`,
          recycle: {
            fairShare: {
              peers: `file://${peersFile}`,
              self: address,
              loadPort,
              loadHost: address,
              tolerance: TOLERANCE,
              periodMs: 250,
              windowMs: 1000,
              warmupMs: 2000,
              maxShedFraction: 0.5,
            },
          },
        },
      ],
      clusters: [{ name: 'app', target: `static:///${(backends[i] as Backend).key}` }],
      routes: [{ cluster: 'app' }],
      admin: { address: '127.0.0.1:0' },
    });
    const proxy = await ProxyServer.start(config, { logger: quietLogger, random: new SeededRandom(100 + i) });
    replicas.push(proxy);
    cleanups.push(() => proxy.close());
  }
  const listPeers = (): void => {
    const tmp = `${peersFile}.tmp`;
    const list = addresses.map((address, i) => ({ address, port: replicas[i]?.listenerPort('web') }));
    writeFileSync(tmp, JSON.stringify(list));
    renameSync(tmp, peersFile);
  };
  return { backends, replicas, listPeers };
}

describe('listeners[].recycle.fairShare', () => {
  it('evens out 9 pinned clients placed 5/3/1 over 3 proxy replicas, without a failed request', async () => {
    const { backends, replicas, listPeers } = await startReplicas(ADDRESSES);
    const ports = replicas.map((r) => r.listenerPort('web') as number);

    const front = new RandomFront(
      ADDRESSES.map((host, i) => ({ host, port: ports[i] as number })),
      // Reconnects land 2,2,2,2,0,0,2 (seeded): the replica at the mean gets none of them.
      281,
      PLACE,
    );
    const frontPort = await front.listen();
    cleanups.push(() => front.close());
    const clients = startClients(`http://127.0.0.1:${frontPort}`, PLACE.length);
    cleanups.push(() => clients.stop());
    await clients.start();
    expect(front.placed).toEqual([5, 3, 1]);
    // No replica is listed yet, so none sheds: the placement shows in the load.
    expect(spread(await nextShares(backends, 200))).toBeGreaterThan(0.5);
    listPeers();

    // Converged: three connections on every replica, held while the next 600 requests are
    // counted; then every replica within 15% of the mean. A shed decided on the lagging load
    // window just before 3/3/3 can still move a client during the count: then count again,
    // within the same 15 s.
    const started = Date.now();
    const total = (): number => front.placed.reduce((a, b) => a + b, 0);
    const even = (): boolean => front.live.every((n) => n === 3);
    let convergedMs = 0;
    let after: number[] = [];
    for (;;) {
      await waitFor(even, Math.max(1, 15_000 - (Date.now() - started)), 'three connections on every replica');
      convergedMs = Date.now() - started;
      const placements = total();
      after = await nextShares(backends, 600);
      if ((total() === placements && even()) || Date.now() - started >= 15_000) break;
    }
    await clients.stop();

    expect(spread(after), `shares ${after.join(', ')}`).toBeLessThanOrEqual(0.15);
    expect(convergedMs).toBeLessThan(15_000);
    expect(clients.stats.failed, clients.stats.errors.join(', ')).toBe(0);
    const stats = replicas.map((r) => r.listenerFairShare('web'));
    // The overloaded replica shed; one never above the fair share (plus tolerance) closed nothing.
    expect(stats[0]?.shed).toBeGreaterThan(0);
    stats.forEach((s, i) => {
      if ((s?.maxShare ?? 0) <= 1 + TOLERANCE) expect(s?.shed, `replica ${i} never above its share`).toBe(0);
    });
    // The replica placed at the mean (3 of 9) kept its connections and closed none.
    expect(front.placed[1]).toBe(3);
    expect(stats[1]?.shed, `replica 1 at the mean: ${JSON.stringify(stats[1])}`).toBe(0);
    expect(stats[1]?.peersAnswering).toBe(2);
    // The same metrics as the server recycler, on the proxy's /metrics.
    const metrics = await fetchText(replicas[0]?.adminPort as number, '/metrics');
    expect(metrics.body).toMatch(/^evenlb_server_fair_share_connections_shed_total [1-9]/m);
    expect(metrics.body).toMatch(/^evenlb_server_fair_share_peers_answering 2$/m);
    expect(metrics.body).toMatch(/^evenlb_server_fair_share_ratio /m);
  }, 60_000);

  it('sheds h2c sessions with GOAWAY until two replicas hold two sessions each, no stream failing', async () => {
    const { RetryingH2Client } = await import('../server/support/h2-client.js');
    const addresses = ['127.0.0.66', '127.0.0.67'];
    const { replicas, listPeers } = await startReplicas(addresses);
    const ports = replicas.map((r) => r.listenerPort('web') as number);
    const front = new RandomFront(
      addresses.map((host, i) => ({ host, port: ports[i] as number })),
      11,
      [0, 0, 0, 0],
    );
    const frontPort = await front.listen();
    cleanups.push(() => front.close());
    const clients = Array.from({ length: 4 }, () => new RetryingH2Client(`http://127.0.0.1:${frontPort}`));
    let running = true;
    let failed = 0;
    let ok = 0;
    const deadline = Date.now() + 30_000;
    const loops = clients.map(async (c) => {
      while (running && Date.now() < deadline) {
        try {
          const res = await c.get('/');
          if (res.status === 200) ok++;
          else failed++;
        } catch {
          failed++;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    });
    try {
      await waitFor(() => ok >= 40, 10_000, 'the first requests');
      listPeers();
      // Sessions each replica holds (the front's client sockets of a GOAWAY'd session may
      // linger on the client's side; the replica has closed them).
      const open = async (r: ProxyServer): Promise<number> => {
        const m = await fetchText(r.adminPort as number, '/metrics');
        return Number(/^evenlb_proxy_downstream_connections\{listener="web"\} (\d+)/m.exec(m.body)?.[1]);
      };
      await waitFor(
        async () => (await Promise.all(replicas.map(open))).every((n) => n === 2),
        15_000,
        'two sessions on each replica',
      );
    } finally {
      running = false;
      await Promise.all(loops);
      await Promise.all(clients.map((c) => c.close()));
    }
    expect(failed).toBe(0);
    expect(replicas[0]?.listenerFairShare('web')?.shed).toBeGreaterThan(0);
  }, 40_000);
});

describe('listeners[].recycle.fairShare across a reload', () => {
  it('a listener replaced on another address takes over the load-exchange port', async () => {
    const loadPort = await freePort('127.0.0.1');
    const config = (address: string) =>
      normalizeProxyConfig({
        listeners: [
          {
            name: 'web',
            address,
            recycle: { fairShare: { peers: 'static:///127.0.0.1:1', loadPort, loadHost: '127.0.0.1' } },
          },
        ],
        clusters: [{ name: 'app', target: 'static:///127.0.0.1:1' }],
      });
    const proxy = await ProxyServer.start(config('127.0.0.68:0'), { logger: quietLogger });
    cleanups.push(() => proxy.close());
    const load = async () => JSON.parse((await fetchText(loadPort, '/.well-known/evenlb/load')).body) as unknown;
    expect(await load()).toMatchObject({ protocol: 'evenlb-load/1' });
    const oldPort = proxy.listenerPort('web') as number;
    await proxy.reload(config('127.0.0.69:0'));
    expect(proxy.listenerFairShare('web')).toBeDefined();
    // Once the old listener is gone, the new one's shedder serves the document (it could bind
    // the port because the old one gave it up before).
    const refused = () =>
      new Promise<boolean>((resolve) => {
        const s = net.connect(oldPort, '127.0.0.68');
        s.once('connect', () => {
          s.destroy();
          resolve(false);
        });
        s.once('error', () => resolve(true));
      });
    await waitFor(refused, 5_000, 'the old listener to close');
    expect(await load()).toMatchObject({ protocol: 'evenlb-load/1' });
  });
});

describe('listeners[].recycle.fairShare validation', () => {
  const base = (fairShare: unknown, protocol = 'http') => ({
    listeners: [
      {
        name: 'web',
        address: '127.0.0.1:0',
        protocol,
        ...(protocol === 'tcp' ? { cluster: 'app' } : {}),
        recycle: { fairShare },
      },
    ],
    clusters: [{ name: 'app', target: 'static:///127.0.0.1:1' }],
  });
  const ok = { peers: 'static:///127.0.0.1:1', loadPort: 9901 };
  const cases = [
    {
      name: 'a tolerance below 0',
      value: { ...ok, tolerance: -1 },
      error: /listeners\[0\]\.recycle\.fairShare.*"tolerance".*received -1/,
    },
    {
      name: 'an unknown key',
      value: { ...ok, tolerence: 0.1 },
      error: /listeners\[0\]\.recycle\.fairShare.*unknown option "tolerence"/,
    },
    { name: 'no peers', value: { loadPort: 9901 }, error: /listeners\[0\]\.recycle\.fairShare.*"peers"/ },
    {
      name: 'no loadPort',
      value: { peers: 'static:///127.0.0.1:1' },
      error: /listeners\[0\]\.recycle\.fairShare\.loadPort" is required/,
    },
    {
      name: 'a tcp listener',
      value: ok,
      protocol: 'tcp',
      error: /listeners\[0\]\.recycle\.fairShare" is only valid for protocol "http" or "https"/,
    },
  ];
  for (const c of cases) {
    it(`rejects ${c.name}, naming the field`, () => {
      expect(() => normalizeProxyConfig(base(c.value, c.protocol))).toThrow(c.error);
    });
  }

  it('rejects fairShare on a second listener (one set of fair-share metrics per proxy)', () => {
    const config = base(ok);
    const second = { name: 'web2', address: '127.0.0.1:0', recycle: { fairShare: { ...ok, loadPort: 9902 } } };
    expect(() => normalizeProxyConfig({ ...config, listeners: [...config.listeners, second] })).toThrow(
      /listeners\[1\]\.recycle\.fairShare" may be set on one listener only/,
    );
  });

  it('accepts the recycler option shape and keeps it in the configuration', () => {
    const config = normalizeProxyConfig(base({ ...ok, tolerance: 0.2, loadMetric: 'in-flight' }));
    expect(config.listeners[0]?.recycle?.fairShare).toEqual({ ...ok, tolerance: 0.2, loadMetric: 'in-flight' });
  });
});
