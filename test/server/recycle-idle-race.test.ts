/**
 * The idle-close race of HTTP/1.1 keep-alive: a connection past its age that is idle is closed
 * by the server once quiet for `idleCloseDelayMs`; a keep-alive client that sends its next
 * request at that moment loses it. Plain undici clients (no evenlb dispatcher, no retries)
 * pause between requests for a seeded random time centred on that idle-close delay, so many
 * of their requests land on the edge of it. The recycler must not lose any: it announces
 * `Keep-Alive: timeout` no larger than the connection's time left, and closes connections
 * with little time left by `Connection: close` on a response instead of an idle close.
 */
import http from 'node:http';
import { Client } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.js';
import { recycleConnections } from '../../src/server/index.js';
import { listen, PerConnectionCounter, shutdown } from './support/servers.js';

const LOAD_MS = 5000;
const MAX_REQUESTS_PER_LOOP = 1000;
const CLIENTS = 8;
const MAX_CONNECTION_AGE_MS = 30;
const IDLE_CLOSE_DELAY_MS = 20;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface Loaded {
  readonly ok: number;
  readonly errors: readonly string[];
  readonly counter: PerConnectionCounter;
  readonly recycler: ReturnType<typeof recycleConnections>;
}

/**
 * A server with the recycler (`maxConnectionAgeMs`, seeded jitter) and CLIENTS plain undici
 * Clients, one per loop so each connection is idle exactly for the pause between requests,
 * running for LOAD_MS (at most MAX_REQUESTS_PER_LOOP requests each).
 */
async function load(
  maxConnectionAgeMs: number,
  seed: number,
  clientOptions: Client.Options,
  pauseMs: (random: SeededRandom) => number,
): Promise<Loaded> {
  const counter = new PerConnectionCounter();
  const server = http.createServer((req, res) => {
    counter.add(req.socket);
    res.end('ok');
  });
  const recycler = recycleConnections(server, {
    maxConnectionAgeMs,
    idleCloseDelayMs: IDLE_CLOSE_DELAY_MS,
    random: new SeededRandom(seed),
  });
  cleanups.push(() => recycler.close());
  const port = await listen(server);
  cleanups.push(() => shutdown(server));
  const until = Date.now() + LOAD_MS;
  let ok = 0;
  const errors: string[] = [];
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, n) => {
      const client = new Client(`http://127.0.0.1:${port}`, clientOptions);
      cleanups.push(() => client.close());
      const random = new SeededRandom(seed * 100 + n);
      for (let i = 0; i < MAX_REQUESTS_PER_LOOP && Date.now() < until; i++) {
        try {
          const res = await client.request({ path: '/', method: 'GET' });
          if ((await res.body.text()) === 'ok') ok++;
          else errors.push('bad body');
        } catch (err) {
          errors.push(String((err as { code?: string }).code ?? err));
        }
        await sleep(pauseMs(random));
      }
    }),
  );
  return { ok, errors, counter, recycler };
}

describe('recycleConnections: HTTP/1.1 keep-alive clients pausing around the idle-close delay', () => {
  it('8 undici Clients (no retries), 5 s: connections recycle, 0 failed requests', async () => {
    // Idle for the idle-close delay or 1 ms less (the client sees the response end a little
    // after the server does): the next request races the server's idle close.
    const { ok, errors, counter, recycler } = await load(
      MAX_CONNECTION_AGE_MS,
      11,
      {},
      (random) => IDLE_CLOSE_DELAY_MS - 1 + random.int(2),
    );
    expect(errors.length, `${errors.length} of ${ok + errors.length} failed: ${errors.slice(0, 5).join(', ')}`).toBe(0);
    expect(ok).toBeGreaterThan(100);
    // Connections were in fact recycled by age, many times over.
    expect(counter.counts().length).toBeGreaterThanOrEqual(50);
    expect(recycler.stats().closed.age).toBeGreaterThanOrEqual(40);
  }, 30_000);

  it('undici Clients honouring Keep-Alive to the millisecond, 2.5 s ages: keep-alive reuse, 0 failed', async () => {
    // Threshold 0: the client reuses an idle socket for the whole announced timeout, the
    // tightest a client may honour it. Mostly the idle-close delay; one pause in ten around a
    // whole second (the smallest announced timeout), so sockets also go idle right up to their
    // announced limit.
    const { ok, errors, counter } = await load(2500, 12, { keepAliveTimeoutThreshold: 0 }, (random) =>
      random.int(10) === 0 ? 950 + random.int(101) : IDLE_CLOSE_DELAY_MS - 1 + random.int(2),
    );
    expect(errors.length, `${errors.length} of ${ok + errors.length} failed: ${errors.slice(0, 5).join(', ')}`).toBe(0);
    const counts = counter.counts();
    // Connections lasted ~2.5 s at most, each carrying many requests (keep-alive still works).
    expect(counts.length).toBeGreaterThanOrEqual(2 * CLIENTS);
    expect(ok / counts.length).toBeGreaterThan(5);
  }, 30_000);
});
