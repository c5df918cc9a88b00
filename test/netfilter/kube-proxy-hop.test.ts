/**
 * Through a real kube-proxy-like hop: a network namespace with kube-proxy's iptables rules
 * (`statistic --mode random` DNAT from a Service VIP in 127.0.0.0/8 to loopback "pods"),
 * backends and clients as real processes inside it.
 *
 * The scale-out check: 3 backends, 12 keep-alive client connections, a 4th backend added by
 * `syncEndpoints`. Without the recycler the connections stay where conntrack pinned them and
 * the new backend gets nothing. With `maxConnectionAgeMs` T, connections rotate and each new
 * one picks the new backend with probability 1/4, so within 3T it gets ~20% of the requests
 * (a connection's first rotation comes on average T/2 into the window). Which backend a
 * connection lands on is the kernel's random draw — not seedable — and 12 connections × ~3
 * rotations is only ~36 draws, so one window alone misses 15% about one time in five. The
 * scale-out is therefore repeated TRIALS times (back to 3 backends, wait until every
 * connection has rotated off the 4th, add it again) and the share is pooled over all windows.
 * Measured here: pooled shares of 18–23% (mean ~20%, standard deviation ~2% at 12 trials,
 * ~1.6% at 20), so a miss of 15% is a >3-sigma event; a recycler that does not rotate scores 0.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeProxyNamespace, resolveTool } from '../../src/netfilter/index.js';
import { bundleFixture, FixtureProcess } from '../server/support/fixture-process.js';
import { netnsSupport } from '../support/netns-support.js';

const support = netnsSupport();
const skipNote = support.ok ? '' : ` (skipped: ${support.reason})`;

const VIP = '127.100.0.1';
const RECYCLED_PORT = 8080;
const PLAIN_PORT = 8081;
const AGE_MS = 150;
const WINDOW_MS = 3 * AGE_MS;
/** Longer than the largest jittered age (1.1 T): every connection should have rotated since. */
const SETTLE_MS = Math.ceil(1.2 * AGE_MS);
const TRIALS = 20;
const CONNECTIONS = 12;
/** Pause after each response: ~12 × 150 req/s leaves the CPU to the backends and the recycler's timers. */
const THINK_MS = 5;
const BACKENDS = ['127.0.1.1', '127.0.1.2', '127.0.1.3', '127.0.1.4'] as const;
const NEW_BACKEND = BACKENDS[3];

const fixtures = join(import.meta.dirname, 'fixtures');
const bundles: Record<'backend' | 'client' | 'holder', string> = { backend: '', client: '', holder: '' };
let ns: KubeProxyNamespace | undefined;

function inNamespace(bundle: string, config: unknown): FixtureProcess {
  if (ns === undefined) throw new Error('no namespace');
  return new FixtureProcess(ns.spawn(process.execPath, [bundle, JSON.stringify(config)], { stdio: 'pipe' }));
}

function namespaces(): string {
  return execFileSync(resolveTool('ip') ?? 'ip', ['netns', 'list'], { encoding: 'utf8' });
}

const endpoints = (count: number, port: number) => BACKENDS.slice(0, count).map((address) => ({ address, port }));

async function window(
  client: FixtureProcess,
  ms: number,
  count?: number,
): Promise<{ counts: Record<string, number>; errors: number }> {
  const seen = client.messages.length;
  client.send({ cmd: 'window', ms, count });
  const message = await client.waitFor('window', ms + 10_000, (m) => client.messages.indexOf(m) >= seen);
  return message as unknown as { counts: Record<string, number>; errors: number };
}

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

describe(`kube-proxy hop in a network namespace${skipNote}`, () => {
  beforeAll(async () => {
    if (!support.ok) return;
    [bundles.backend, bundles.client, bundles.holder] = await Promise.all([
      bundleFixture(join(fixtures, 'backend.ts')),
      bundleFixture(join(fixtures, 'client.ts')),
      bundleFixture(join(fixtures, 'namespace-holder.ts')),
    ]);
    ns = await KubeProxyNamespace.create({ vip: VIP, port: 80 });
    const pods = BACKENDS.map((address, i) =>
      inNamespace(bundles.backend, {
        address,
        name: address,
        recycledPort: RECYCLED_PORT,
        plainPort: PLAIN_PORT,
        maxConnectionAgeMs: AGE_MS,
        seed: i + 1,
      }),
    );
    await Promise.all(pods.map((p) => p.waitFor('listening')));
  });

  const holders: FixtureProcess[] = [];
  afterAll(async () => {
    for (const h of holders) await h.stop('SIGTERM');
    await ns?.close();
  });

  it.skipIf(!support.ok)('new connections through the VIP land on the endpoints at random', async () => {
    await ns!.syncEndpoints(endpoints(3, PLAIN_PORT));
    const rules = await ns!.natRules();
    expect(rules).toMatch(/--probability 0\.3333/);
    expect(rules).toMatch(/--to-destination 127\.0\.1\.3:8081/);

    const client = inNamespace(bundles.client, { url: `http://${VIP}`, connections: 4, fresh: true, maxMs: 30_000 });
    await client.waitFor('ready');
    const w = await window(client, 20_000, 300);
    client.send({ cmd: 'stop' });
    await client.exited;
    expect(w.errors).toBe(0);
    const total = sum(w.counts);
    expect(total).toBe(300);
    for (const address of BACKENDS.slice(0, 3)) expect(w.counts[address] ?? 0).toBeGreaterThan(0.15 * total);
    expect(w.counts[NEW_BACKEND]).toBeUndefined();
  });

  it.skipIf(!support.ok)(
    'scale-out 3 → 4 with 12 keep-alive connections: without the recycler the new backend gets 0 requests',
    async () => {
      await ns!.syncEndpoints(endpoints(3, PLAIN_PORT));
      const client = inNamespace(bundles.client, {
        url: `http://${VIP}`,
        connections: CONNECTIONS,
        thinkMs: THINK_MS,
        maxMs: 20_000,
      });
      await client.waitFor('ready');
      await ns!.syncEndpoints(endpoints(4, PLAIN_PORT));
      const w = await window(client, WINDOW_MS);
      client.send({ cmd: 'stop' });
      await client.exited;
      expect(w.errors).toBe(0);
      expect(sum(w.counts)).toBeGreaterThan(50);
      expect(w.counts[NEW_BACKEND] ?? 0).toBe(0);
    },
  );

  it.skipIf(!support.ok)(
    `scale-out 3 → 4 with 12 keep-alive connections: with the recycler (maxConnectionAgeMs ${AGE_MS}) the new backend gets ≥ 15% within 3 × maxConnectionAgeMs (pooled over ${TRIALS} scale-outs)`,
    async () => {
      await ns!.syncEndpoints(endpoints(3, RECYCLED_PORT));
      const client = inNamespace(bundles.client, {
        url: `http://${VIP}`,
        connections: CONNECTIONS,
        thinkMs: THINK_MS,
        maxMs: 40_000,
      });
      await client.waitFor('ready');
      let newBackend = 0;
      let total = 0;
      let errors = 0;
      const shares: number[] = [];
      for (let trial = 0; trial < TRIALS; trial++) {
        await ns!.syncEndpoints(endpoints(3, RECYCLED_PORT));
        errors += (await window(client, SETTLE_MS)).errors;
        // Every connection has rotated off the 4th backend: each trial starts it from zero.
        let offNewBackend = false;
        for (let i = 0; i < 40 && !offNewBackend; i++) {
          const probe = await window(client, 50);
          errors += probe.errors;
          offNewBackend = (probe.counts[NEW_BACKEND] ?? 0) === 0;
        }
        expect(offNewBackend).toBe(true);
        await ns!.syncEndpoints(endpoints(4, RECYCLED_PORT));
        const w = await window(client, WINDOW_MS);
        errors += w.errors;
        const got = w.counts[NEW_BACKEND] ?? 0;
        newBackend += got;
        total += sum(w.counts);
        shares.push(got / Math.max(1, sum(w.counts)));
      }
      client.send({ cmd: 'stop' });
      await client.exited;

      const pooled = newBackend / total;
      console.log(
        `new backend share within 3×${AGE_MS} ms: pooled ${(100 * pooled).toFixed(1)}% of ${total} requests; ` +
          `per scale-out ${shares.map((s) => `${(100 * s).toFixed(0)}%`).join(' ')}`,
      );
      expect(errors).toBe(0);
      expect(pooled).toBeGreaterThanOrEqual(0.15);
    },
  );

  it.skipIf(!support.ok)(
    'close() kills the children and deletes the namespace; a second close() is a no-op',
    async () => {
      const other = await KubeProxyNamespace.create();
      expect(namespaces()).toContain(other.name);
      const child = other.spawn('sleep', ['60'], { stdio: 'ignore' });
      const exited = new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
      await other.close();
      await other.close();
      expect(await exited).toBe('SIGTERM');
      expect(namespaces()).not.toContain(other.name);
      await expect(other.syncEndpoints([])).rejects.toMatchObject({ code: 'EVENLB_CLOSED' });
    },
  );

  it.skipIf(!support.ok)(
    'regression: close() kills a detached child with its process group, so what the child started goes too',
    async () => {
      const other = await KubeProxyNamespace.create();
      // A "pod" that starts a process of its own in its group and reports its pid.
      const pod = other.spawn('sh', ['-c', 'sleep 60 & echo $!; wait'], {
        stdio: ['ignore', 'pipe', 'ignore'],
        detached: true,
      });
      const grandchild = await new Promise<number>((resolve) =>
        pod.stdout?.once('data', (chunk: Buffer) => resolve(Number(String(chunk).trim()))),
      );
      const alive = (pid: number): boolean => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      expect(alive(grandchild)).toBe(true);
      await other.close();
      for (let i = 0; i < 250 && alive(grandchild); i++) await new Promise((r) => setTimeout(r, 20));
      const leaked = alive(grandchild);
      if (leaked) process.kill(grandchild, 'SIGKILL');
      expect(leaked).toBe(false);
    },
  );

  for (const how of ['signal', 'exit'] as const) {
    it.skipIf(!support.ok)(`the namespace is deleted when its owning process ends (${how})`, async () => {
      const holder = FixtureProcess.start(bundles.holder, [how]);
      holders.push(holder);
      const { name } = (await holder.waitFor('created')) as { name: string; type: string };
      if (how === 'signal') holder.child.kill('SIGTERM');
      const exit = await holder.exited;
      expect(how === 'signal' ? exit.signal : exit.code).toBe(how === 'signal' ? 'SIGTERM' : 0);
      expect(namespaces()).not.toContain(name);
    });
  }

  it.skipIf(!support.ok)('rejects a VIP outside 127.0.0.0/8 and a malformed endpoint', async () => {
    await expect(KubeProxyNamespace.create({ vip: '10.0.0.1' })).rejects.toMatchObject({
      code: 'EVENLB_INVALID_OPTION',
    });
    await expect(ns!.syncEndpoints([{ address: 'pod-1', port: 8080 }])).rejects.toMatchObject({
      code: 'EVENLB_INVALID_OPTION',
    });
  });
});
