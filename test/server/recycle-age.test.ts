/**
 * Age and idle limits on real connections: under continuous load a 200 ms age makes
 * connections rotate without failing a request (HTTP/1 via `Connection: close` on a response,
 * HTTP/2 via GOAWAY); idle connections close with the right reason; `graceMs` cuts a retiring
 * connection whose response outlives it.
 */
import http from 'node:http';
import http2 from 'node:http2';
import { Client, Pool } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { SeededRandom } from '../../src/core/random.js';
import { type RecyclerOptions, recycleConnections } from '../../src/server/index.js';
import { RetryingH2Client } from './support/h2-client.js';
import { httpGetText, listen, PerConnectionCounter, shutdown, waitFor } from './support/servers.js';

const LOAD_MS = 3000;
const MAX_REQUESTS = 200_000;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

/**
 * A handler mixing the cases a retiring connection meets: an immediate response, a delayed
 * one (headers not yet written when the age passes), and a streamed one (headers already out).
 */
function mixedHandler(counter: PerConnectionCounter, random: SeededRandom) {
  return (req: http.IncomingMessage, res: http.ServerResponse) => {
    counter.add(req.socket);
    const kind = random.int(3);
    if (kind === 0) res.end('ok');
    else if (kind === 1) setTimeout(() => res.end('ok'), 1 + random.int(3));
    else {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('o');
      setTimeout(() => res.end('k'), 1 + random.int(3));
    }
  };
}

/** Runs `loops` sequential request loops for LOAD_MS (and at most MAX_REQUESTS requests). */
async function load(
  loops: number,
  send: () => Promise<string>,
): Promise<{ ok: number; failed: number; errors: string[] }> {
  const until = Date.now() + LOAD_MS;
  let sent = 0;
  let ok = 0;
  const errors: string[] = [];
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (Date.now() < until && sent < MAX_REQUESTS) {
        sent++;
        try {
          if ((await send()) === 'ok') ok++;
          else errors.push('bad body');
        } catch (err) {
          errors.push(String((err as { code?: string }).code ?? err));
        }
      }
    }),
  );
  return { ok, failed: errors.length, errors: errors.slice(0, 5) };
}

async function recycledHttp1(options: RecyclerOptions, counter: PerConnectionCounter, seed = 1) {
  const server = http.createServer(mixedHandler(counter, new SeededRandom(seed)));
  const recycler = recycleConnections(server, { random: new SeededRandom(seed + 1), ...options });
  cleanups.push(() => recycler.close());
  const port = await listen(server);
  cleanups.push(() => shutdown(server));
  return { server, recycler, port };
}

describe('recycleConnections: maxConnectionAgeMs 200 under continuous load for 3 s', () => {
  it('HTTP/1.1, undici Pool with 4 connections: connections rotate, 0 failed', async () => {
    const counter = new PerConnectionCounter();
    const { recycler, port } = await recycledHttp1({ maxConnectionAgeMs: 200 }, counter);
    const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 4 });
    cleanups.push(() => pool.close());

    const r = await load(4, async () => (await pool.request({ path: '/', method: 'GET' })).body.text());
    expect(r.failed, r.errors.join(', ')).toBe(0);
    expect(r.ok).toBeGreaterThan(100);
    // ~4 × 3000/200 = 60 expected; a third of that leaves room for a slow machine.
    expect(counter.counts().length).toBeGreaterThanOrEqual(20);
    expect(recycler.stats().closed.age).toBeGreaterThanOrEqual(16);
  });

  it("HTTP/1.1, node's http.Agent (keepAlive, 2 sockets): connections rotate, 0 failed", async () => {
    const counter = new PerConnectionCounter();
    const { port } = await recycledHttp1({ maxConnectionAgeMs: 200 }, counter, 5);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
    cleanups.push(async () => agent.destroy());
    const get = () => httpGetText(port, agent);

    const r = await load(2, get);
    expect(r.failed, r.errors.join(', ')).toBe(0);
    expect(counter.counts().length).toBeGreaterThanOrEqual(10);
  });

  it('h2c, node http2 client with 4 concurrent streams: sessions rotate by GOAWAY, 0 failed', async () => {
    const counter = new PerConnectionCounter();
    const random = new SeededRandom(3);
    const server = http2.createServer();
    server.on('stream', (stream) => {
      counter.add(stream.session as object);
      const delayMs = random.int(4);
      const respond = () => {
        if (stream.destroyed) return;
        stream.respond({ ':status': 200 });
        stream.end('ok');
      };
      if (delayMs === 0) respond();
      else setTimeout(respond, delayMs);
    });
    const recycler = recycleConnections(server, { maxConnectionAgeMs: 200, random: new SeededRandom(4) });
    cleanups.push(() => recycler.close());
    const port = await listen(server);
    cleanups.push(() => shutdown(server));
    const client = new RetryingH2Client(`http://127.0.0.1:${port}`);
    cleanups.push(() => client.close());

    const r = await load(4, async () => (await client.get('/')).body);
    expect(r.failed, r.errors.join(', ')).toBe(0);
    expect(counter.counts().length).toBeGreaterThanOrEqual(5);
    expect(recycler.stats().closed.age).toBeGreaterThanOrEqual(4);
  });
});

describe('recycleConnections: idle connections and grace', () => {
  it('decides on the injected clock: announces the time left, closes by age only when that clock says so', async () => {
    const clock = new ManualClock();
    const counter = new PerConnectionCounter();
    const { recycler, port } = await recycledHttp1(
      { maxConnectionAgeMs: 10_000, ageJitter: 0, idleCloseDelayMs: 100, clock },
      counter,
    );
    // Threshold 0: the client keeps a socket idle for exactly the announced timeout (undici's
    // default subtracts 2 s, so it would close after any `timeout` of 2 s or less by itself).
    const client = new Client(`http://127.0.0.1:${port}`, { keepAliveTimeoutThreshold: 0 });
    cleanups.push(() => client.close());

    const get = async () => {
      const res = await client.request({ path: '/', method: 'GET' });
      await res.body.text();
      return [res.headers.connection, res.headers['keep-alive']];
    };
    // 10 s left: capped by the server's keepAliveTimeout (5 s).
    expect(await get()).toEqual(['keep-alive', 'timeout=5']);
    clock.advance(7000);
    expect(await get()).toEqual(['keep-alive', 'timeout=3']);
    clock.advance(1999);
    expect(await get()).toEqual(['keep-alive', 'timeout=1']);
    // Less than a second left: too little to announce, this response closes the connection.
    clock.advance(2);
    expect(await get()).toEqual(['close', undefined]);
    await waitFor(() => recycler.stats().closed.age === 1, 5000, 'the age close');
    expect(await get()).toEqual(['keep-alive', 'timeout=5']);
    // Age reached after 10 s idle (≥ idleCloseDelayMs): closed at once, no request needed.
    clock.advance(10_000);
    await waitFor(() => recycler.stats().closed.age === 2, 5000, 'the idle age close');
    expect(counter.counts()).toEqual([4, 1]);
  });

  it('idleTimeoutMs closes an idle keep-alive connection (reason idle); the next request reconnects', async () => {
    const counter = new PerConnectionCounter();
    const { recycler, port } = await recycledHttp1({ idleTimeoutMs: 100 }, counter);
    const client = new Client(`http://127.0.0.1:${port}`);
    cleanups.push(() => client.close());

    expect(await (await client.request({ path: '/', method: 'GET' })).body.text()).toBe('ok');
    await waitFor(() => recycler.stats().closed.idle === 1, 5000, 'the idle close');
    expect(await (await client.request({ path: '/', method: 'GET' })).body.text()).toBe('ok');
    expect(counter.counts()).toEqual([1, 1]);
  });

  it('an idle connection past its age closes once quiet for idleCloseDelayMs (reason age)', async () => {
    const counter = new PerConnectionCounter();
    const { recycler, port } = await recycledHttp1(
      { maxConnectionAgeMs: 150, ageJitter: 0, idleCloseDelayMs: 20 },
      counter,
    );
    const client = new Client(`http://127.0.0.1:${port}`);
    cleanups.push(() => client.close());

    expect(await (await client.request({ path: '/', method: 'GET' })).body.text()).toBe('ok');
    await waitFor(() => recycler.stats().closed.age === 1, 5000, 'the age close');
    expect(recycler.stats().open).toBe(0);
  });

  it('an idle HTTP/2 session past its age gets GOAWAY and closes (reason age)', async () => {
    const server = http2.createServer();
    server.on('stream', (stream) => {
      stream.respond({ ':status': 200 });
      stream.end('ok');
    });
    const recycler = recycleConnections(server, { maxConnectionAgeMs: 100, ageJitter: 0 });
    cleanups.push(() => recycler.close());
    const port = await listen(server);
    cleanups.push(() => shutdown(server));
    const client = new RetryingH2Client(`http://127.0.0.1:${port}`);
    cleanups.push(() => client.close());

    expect((await client.get('/')).body).toBe('ok');
    await waitFor(() => recycler.stats().closed.age === 1, 5000, 'the GOAWAY close');
  });

  it('graceMs destroys a retiring connection whose response outlives it', async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200);
      res.write('partial');
      // Never ends: only the grace can close this connection.
    });
    const recycler = recycleConnections(server, { maxConnectionAgeMs: 50, ageJitter: 0, graceMs: 100 });
    cleanups.push(() => recycler.close());
    const port = await listen(server);
    cleanups.push(() => shutdown(server));
    const client = new Client(`http://127.0.0.1:${port}`);
    cleanups.push(() => client.destroy());

    const outcome = await client
      .request({ path: '/', method: 'GET' })
      .then((res) => res.body.text())
      .then(
        () => 'completed',
        (err: { code?: string }) => err.code ?? String(err),
      );
    // The response was cut: the socket closed mid-body (`Connection: close` framing makes undici
    // report an incomplete chunked body as a parser error).
    expect(outcome).toMatch(/UND_ERR_SOCKET|ECONNRESET|HTTPParserError/);
    await waitFor(() => recycler.stats().closed.age === 1, 5000, 'the grace destroy');
  });
});
