/**
 * `evenlb/grpc` follows discovery and failures while calls flow, with real grpc-js servers:
 * - `file:///`: an endpoint added to the file gets calls within 1 s; one marked not-ready gets
 *   none from 1 s after the change; no call fails meanwhile.
 * - a removed endpoint keeps its subchannel until its in-flight calls end, then releases it.
 * - grpc-js's own `round_robin` behind an evenlb resolver gets only eligible endpoints.
 * - a server killed mid-run: its calls move to the others; failed calls ≤ the calls in flight
 *   to it at the kill.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.js';
import { evenlbServiceConfig, type GrpcRegistration, registerGrpc } from '../../src/grpc/index.js';
import { call, EchoClient, type EchoServer, startEchoServers, waitUntil } from './echo-servers.js';

const servers: EchoServer[] = [];
let evenlb: GrpcRegistration;
let dir = '';
const clients: EchoClient[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'evenlb-grpc-'));
  evenlb = registerGrpc(grpc, { random: new SeededRandom(5), sourceOptions: { file: { pollIntervalMs: 200 } } });
});
afterAll(async () => {
  for (const c of clients) c.close();
  await evenlb.close();
  await Promise.all(servers.map((s) => s.close()));
  rmSync(dir, { recursive: true, force: true });
});

function writeEndpoints(path: string, list: { server: EchoServer; ready?: boolean }[]): void {
  const tmp = `${path}.tmp`;
  const body = list.map(({ server, ready }) => ({
    address: server.address,
    port: server.port,
    ...(ready === undefined ? {} : { conditions: { ready } }),
  }));
  writeFileSync(tmp, JSON.stringify(body));
  renameSync(tmp, path);
}

/** Calls from `workers` loops until `stop()` says so (bounded by `maxCalls` and 30 s); records who answered when. */
function load(client: EchoClient, workers: number, text: string, maxCalls: number) {
  const log: { server: string; atMs: number }[] = [];
  const failures: string[] = [];
  let sent = 0;
  let stopped = false;
  const deadline = performance.now() + 30_000;
  const done = Promise.all(
    Array.from({ length: workers }, async () => {
      while (!stopped && sent < maxCalls && performance.now() < deadline) {
        sent++;
        const r = await call(client, text);
        if (r.ok) log.push({ server: r.server, atMs: performance.now() });
        else failures.push(`${r.error.code} ${r.error.details}`);
      }
    }),
  );
  return {
    log,
    failures,
    get sent() {
      return sent;
    },
    async stop() {
      stopped = true;
      await done;
    },
  };
}

describe('file:/// target', () => {
  it('an added endpoint gets calls within 1 s, a not-ready one none after 1 s, no call fails', async () => {
    servers.push(...(await startEchoServers(4)));
    const [s1, s2, s3, s4] = servers as [EchoServer, EchoServer, EchoServer, EchoServer];
    const path = join(dir, 'endpoints.json');
    writeEndpoints(path, [{ server: s1 }, { server: s2 }, { server: s3 }]);
    const client = new EchoClient(`file://${path}`, grpc.credentials.createInsecure(), {
      'grpc.service_config': evenlbServiceConfig({ policy: 'round-robin' }),
    });
    clients.push(client);
    const run = load(client, 4, 'delay:1', 20_000);
    await waitUntil(() => s1.served + s2.served + s3.served > 50, 5000, 'calls to the first three');
    expect(s4.served).toBe(0);

    // Scale-up: s4 appears in the file.
    const added = performance.now();
    writeEndpoints(path, [{ server: s1 }, { server: s2 }, { server: s3 }, { server: s4 }]);
    const toFirstCall = await waitUntil(() => s4.served > 0, 3000, 'a call to the added endpoint');
    process.stdout.write(`file:///: added endpoint's first call after ${toFirstCall.toFixed(0)} ms\n`);
    expect(performance.now() - added).toBeLessThanOrEqual(1000);

    // s2 turns not-ready.
    const changed = performance.now();
    writeEndpoints(path, [{ server: s1 }, { server: s2, ready: false }, { server: s3 }, { server: s4 }]);
    await waitUntil(() => performance.now() - changed > 1500, 3000, 'time to pass');
    await run.stop();
    const late = run.log.filter((c) => c.server === s2.name && c.atMs > changed + 1000).length;
    const lastToS2 = Math.max(0, ...run.log.filter((c) => c.server === s2.name).map((c) => c.atMs - changed));
    process.stdout.write(
      `file:///: not-ready endpoint's last call answered ${lastToS2.toFixed(0)} ms after the change\n`,
    );
    expect(late).toBe(0);
    expect(run.log.filter((c) => c.server === s4.name && c.atMs > changed + 1000).length).toBeGreaterThan(0);
    expect(run.failures).toEqual([]);
    const route = evenlb.stats().routes.find((r) => r.target === `file://${path}`);
    expect(route?.endpoints.find((e) => e.key === s2.key)?.state).toBe('not-ready');
    expect(route?.endpoints.find((e) => e.key === s2.key)?.connectivity).toBe('none');
  });
});

describe('draining an endpoint', () => {
  it('keeps its subchannel until its last in-flight call ends, then releases it', async () => {
    const own = await startEchoServers(2);
    servers.push(...own);
    const [stays, leaves] = own as [EchoServer, EchoServer];
    const path = join(dir, 'drain.json');
    writeEndpoints(path, [{ server: stays }, { server: leaves }]);
    const client = new EchoClient(`file://${path}`, grpc.credentials.createInsecure(), {
      'grpc.service_config': evenlbServiceConfig({ policy: 'round-robin', name: 'drain' }),
    });
    clients.push(client);
    const endpoint = () =>
      evenlb
        .stats()
        .routes.find((r) => r.name === 'drain')
        ?.endpoints.find((e) => e.key === leaves.key);
    expect((await call(client)).ok).toBe(true);
    await waitUntil(() => endpoint()?.connectivity === 'ready', 5000, 'the subchannel to connect');
    // Slow calls until one is in flight on the endpoint about to leave.
    const slow: Promise<Awaited<ReturnType<typeof call>>>[] = [];
    while (leaves.inProgress === 0 && slow.length < 10) {
      slow.push(call(client, 'delay:500'));
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(leaves.inProgress).toBeGreaterThan(0);
    writeEndpoints(path, [{ server: stays }]);
    await waitUntil(() => endpoint()?.state === 'draining', 3000, 'the endpoint to drain');
    expect(endpoint()?.connectivity).toBe('ready');
    const results = await Promise.all(slow);
    expect(results.every((r) => r.ok)).toBe(true);
    await waitUntil(() => endpoint() === undefined, 3000, 'the drained endpoint to be released and forgotten');
    const servedBy = leaves.served;
    for (let i = 0; i < 10; i++) expect((await call(client)).ok).toBe(true);
    expect(leaves.served).toBe(servedBy);
  });
});

describe("grpc-js's own policies behind an evenlb resolver", () => {
  it('round_robin gets only the eligible endpoints: a not-ready one gets no call', async () => {
    const own = await startEchoServers(2);
    servers.push(...own);
    const [ready, notReady] = own as [EchoServer, EchoServer];
    const path = join(dir, 'round-robin.json');
    writeEndpoints(path, [{ server: ready }, { server: notReady, ready: false }]);
    const client = new EchoClient(`file://${path}`, grpc.credentials.createInsecure(), {
      'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
    });
    clients.push(client);
    for (let i = 0; i < 40; i++) {
      const r = await call(client);
      expect(r.ok && r.server).toBe(ready.name);
    }
    expect(notReady.served).toBe(0);
  });
});

describe('a server killed mid-run', () => {
  it('moves its calls to the others; failed calls <= calls in flight at the kill', async () => {
    const own = await startEchoServers(4);
    servers.push(...own);
    const target = `static:///${own.map((s) => s.key).join(',')}`;
    const client = new EchoClient(target, grpc.credentials.createInsecure());
    clients.push(client);
    const route = () => evenlb.stats().routes.find((r) => r.target === target);
    const run = load(client, 8, 'delay:20', 3000);
    await waitUntil(() => own.every((s) => s.served > 10), 10_000, 'calls to every server');
    const victim = own[0] as EchoServer;
    // Kill it while it is handling calls.
    await waitUntil(() => victim.inProgress > 0, 5000, 'calls in progress on the server to kill');
    const inFlightClient = route()?.endpoints.find((e) => e.key === victim.key)?.inFlight ?? 0;
    const inFlightServer = victim.inProgress;
    const failedBefore = run.failures.length;
    const killedAt = performance.now();
    victim.kill();
    await waitUntil(() => run.sent > 600 || performance.now() - killedAt > 8000, 10_000, 'calls after the kill');
    await run.stop();
    const failedAfter = run.failures.length - failedBefore;
    // Answers the client received after the kill, per server (a killed server's handlers may still run).
    const after = own.map((s) => run.log.filter((c) => c.server === s.name && c.atMs > killedAt).length);
    process.stdout.write(
      `kill: in flight at the kill ${inFlightClient} (client) / ${inFlightServer} (server); failed ${failedAfter} [${run.failures.slice(failedBefore).join('; ')}]; calls after: ${after.join(' ')}\n`,
    );
    expect(failedBefore).toBe(0);
    expect(failedAfter).toBeLessThanOrEqual(Math.max(inFlightClient, inFlightServer));
    // Only calls already in flight at the kill may still be answered by the killed server.
    expect(after[0]).toBeLessThanOrEqual(inFlightClient);
    for (const n of after.slice(1)) expect(n).toBeGreaterThan(20);
    await waitUntil(
      () => route()?.endpoints.find((e) => e.key === victim.key)?.connectivity !== 'ready',
      5000,
      'the killed server to show as not connected',
    );
  });
});
