/**
 * Slow start through `evenlb/grpc`: with `slowStartMs` in the `evenlb` config, a server that
 * just became ready (a `file:///` endpoint turning ready) gets a share of calls that ramps over
 * the window instead of its full share at once — the same Balancer shaping as BalancedAgent.
 * The ramp runs on a `ManualClock`: shares are judged per simulated second (the same number of
 * answered calls in each), as fractions of the fair share, however slow the machine is. A subchannel's first connect counts as becoming ready, so
 * a channel's initial servers ramp together when it starts (equal weights, even shares). Bad shaping options fail calls with the field named.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { SeededRandom } from '../../src/core/random.js';
import { evenlbServiceConfig, type GrpcRegistration, registerGrpc } from '../../src/grpc/index.js';
import { call, EchoClient, type EchoServer, startEchoServers, waitUntil } from './echo-servers.js';

const WINDOW_MS = 4000;
/** Calls answered in each simulated second (by 4 concurrent callers). */
const PER_SECOND = 400;
/** The registration's clock: the ramp is judged per simulated second, however slow the machine. */
const clock = new ManualClock(1_000_000);
let servers: EchoServer[] = [];
let evenlb: GrpcRegistration;
let dir = '';
const clients: EchoClient[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'evenlb-grpc-slow-'));
  evenlb = registerGrpc(grpc, {
    clock,
    random: new SeededRandom(9),
    sourceOptions: { file: { pollIntervalMs: 100 } },
  });
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
  it('a newly ready server gets a ramping share over slowStartMs, per simulated second', async () => {
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
    // Simulated time moves only here: in steps while waiting (the file source's debounce and
    // poll and the ramp run on the clock), never while calls are being counted.
    const advanceUntil = async (check: () => boolean, stepMs: number, what: string): Promise<void> => {
      await waitUntil(
        () => {
          clock.advance(stepMs);
          return check();
        },
        10_000,
        what,
      );
    };
    // A subchannel's first connect counts as becoming ready, so the initial servers ramp too:
    // let their ramp finish before the new one turns ready.
    await advanceUntil(
      () => {
        void call(client);
        return endpoint(a)?.slowStartWeight === 1 && endpoint(b)?.slowStartWeight === 1;
      },
      100,
      'the initial servers to finish their ramp',
    );
    expect(fresh.served).toBe(0);

    writeEndpoints(path, [
      { server: a, ready: true },
      { server: b, ready: true },
      { server: fresh, ready: true },
    ]);
    // The moment the policy saw it ready (1 ms steps: the ramp starts within 1 ms of it).
    await advanceUntil(() => endpoint(fresh)?.state === 'eligible', 1, 'the server to turn eligible');
    const readyAt = clock.now();
    const ofFair: number[] = [];
    const weights: number[] = [];
    const failures: string[] = [];
    for (let second = 0; second < 6; second++) {
      // The middle of the simulated second: the weight is the ramp's value at second + 0.5.
      clock.advance(readyAt + second * 1000 + 500 - clock.now());
      weights.push(endpoint(fresh)?.slowStartWeight ?? 0);
      let freshHits = 0;
      const worker = async () => {
        for (let i = 0; i < PER_SECOND / 4; i++) {
          const r = await call(client);
          // Due zero-delay timers only (picks grpc-js took back are withdrawn); time stays put.
          clock.advance(0);
          if (!r.ok) failures.push(`${r.error.code} ${r.error.details}`);
          else if (r.server === fresh.name) freshHits++;
        }
      };
      await Promise.all(Array.from({ length: 4 }, worker));
      ofFair.push(freshHits / PER_SECOND / (1 / 3));
    }
    process.stdout.write(
      `grpc slow start: new server's share of fair per simulated second ${ofFair.map((v) => v.toFixed(2)).join(' ')}\n`,
    );
    // Envoy's curve over 4 s (linear, 10% floor): well under fair in the first second, near fair from 4 s.
    expect(ofFair[0]).toBeLessThanOrEqual(0.5);
    expect(ofFair[2] as number).toBeGreaterThan(ofFair[0] as number);
    expect(ofFair[5] as number).toBeGreaterThanOrEqual(0.75);
    expect(weights[0]).toBeLessThan(weights[2] as number);
    expect(weights[5]).toBe(1);
    expect(failures).toEqual([]);
  });

  it('rejects bad shaping options naming the field', () => {
    expect(() => evenlbServiceConfig({ slowStartMs: -1 })).toThrow(/slowStartMs/);
    expect(() => evenlbServiceConfig({ herdingGuard: { maxShareMultiple: 'x' } as never })).toThrow(/herdingGuard/);
    expect(() => evenlbServiceConfig({ zoneRouting: { mode: 'sometimes' } as never })).toThrow(/zoneRouting/);
  });
});
