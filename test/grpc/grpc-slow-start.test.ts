/**
 * Slow start through `evenlb/grpc`: with `slowStartMs` in the `evenlb` config, a server that
 * just became ready (a `file:///` endpoint turning ready) gets a share of calls that ramps over
 * the window instead of its full share at once — the same Balancer shaping as BalancedAgent.
 * Shares are judged per 1 s bucket of answered calls, as fractions of the fair share, with wide
 * tolerances (the machine is shared). A subchannel's first connect counts as becoming ready, so
 * a channel's initial servers ramp together when it starts (equal weights, even shares). Bad shaping options fail calls with the field named.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.js';
import { evenlbServiceConfig, type GrpcRegistration, registerGrpc } from '../../src/grpc/index.js';
import { call, EchoClient, type EchoServer, startEchoServers, waitUntil } from './echo-servers.js';

const WINDOW_MS = 4000;
let servers: EchoServer[] = [];
let evenlb: GrpcRegistration;
let dir = '';
const clients: EchoClient[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'evenlb-grpc-slow-'));
  evenlb = registerGrpc(grpc, { random: new SeededRandom(9), sourceOptions: { file: { pollIntervalMs: 100 } } });
  servers = await startEchoServers(3);
});
afterAll(async () => {
  for (const c of clients) c.close();
  await evenlb.close();
  await Promise.all(servers.map((s) => s.close()));
  rmSync(dir, { recursive: true, force: true });
});

function writeEndpoints(path: string, list: { server: EchoServer; ready: boolean }[]): void {
  const tmp = `${path}.tmp`;
  writeFileSync(
    tmp,
    JSON.stringify(
      list.map(({ server, ready }) => ({ address: server.address, port: server.port, conditions: { ready } })),
    ),
  );
  renameSync(tmp, path);
}

describe('slow start through the evenlb grpc-js policy', () => {
  it('a newly ready server gets a ramping share over slowStartMs, in 1 s buckets', async () => {
    const [a, b, fresh] = servers as [EchoServer, EchoServer, EchoServer];
    const path = join(dir, 'endpoints.json');
    writeEndpoints(path, [
      { server: a, ready: true },
      { server: b, ready: true },
      { server: fresh, ready: false },
    ]);
    const client = new EchoClient(`file://${path}`, grpc.credentials.createInsecure(), {
      'grpc.service_config': evenlbServiceConfig({ policy: 'least-request', slowStartMs: WINDOW_MS, name: 'slow' }),
    });
    clients.push(client);
    const endpoint = (server: EchoServer) =>
      evenlb
        .stats()
        .routes.find((r) => r.name === 'slow')
        ?.endpoints.find((e) => e.key === server.key);
    // A subchannel's first connect counts as becoming ready, so the initial servers ramp too:
    // let their ramp finish before the new one turns ready.
    await waitUntil(
      () => {
        void call(client);
        return endpoint(a)?.slowStartWeight === 1 && endpoint(b)?.slowStartWeight === 1;
      },
      WINDOW_MS + 3000,
      'the initial servers to finish their ramp',
    );
    expect(fresh.served).toBe(0);

    writeEndpoints(path, [
      { server: a, ready: true },
      { server: b, ready: true },
      { server: fresh, ready: true },
    ]);
    // The moment the policy saw it ready.
    await waitUntil(() => endpoint(fresh)?.state === 'eligible', 3000, 'the server to turn eligible');
    const readyAt = performance.now();
    const buckets: { fresh: number; all: number }[] = [];
    const stopAt = readyAt + WINDOW_MS + 2000;
    let sent = 0;
    const failures: string[] = [];
    const worker = async () => {
      while (performance.now() < stopAt && sent < 400_000) {
        sent++;
        const r = await call(client);
        if (!r.ok) {
          failures.push(`${r.error.code} ${r.error.details}`);
          continue;
        }
        const s = Math.floor((performance.now() - readyAt) / 1000);
        const bucket = buckets[s] ?? { fresh: 0, all: 0 };
        buckets[s] = bucket;
        bucket.all++;
        if (r.server === fresh.name) bucket.fresh++;
      }
    };
    await Promise.all(Array.from({ length: 4 }, worker));
    const ofFair = buckets.map((x) => (x === undefined || x.all === 0 ? Number.NaN : x.fresh / x.all / (1 / 3)));
    process.stdout.write(
      `grpc slow start: new server's share of fair per second ${ofFair.map((v) => v.toFixed(2)).join(' ')}\n`,
    );
    // Envoy's curve over 4 s (linear, 10% floor): well under fair in the first second, near fair from 4 s.
    expect(ofFair[0]).toBeLessThanOrEqual(0.5);
    expect(ofFair[2] as number).toBeGreaterThan(ofFair[0] as number);
    expect(ofFair[5] as number).toBeGreaterThanOrEqual(0.75);
    expect(failures).toEqual([]);
  });

  it('rejects bad shaping options naming the field', () => {
    expect(() => evenlbServiceConfig({ slowStartMs: -1 })).toThrow(/slowStartMs/);
    expect(() => evenlbServiceConfig({ herdingGuard: { maxShareMultiple: 'x' } as never })).toThrow(/herdingGuard/);
    expect(() => evenlbServiceConfig({ zoneRouting: { mode: 'sometimes' } as never })).toThrow(/zoneRouting/);
  });
});
