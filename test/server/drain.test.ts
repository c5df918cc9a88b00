/**
 * `drain()` in process, on real sockets: in-flight work finishes and is answered with
 * `Connection: close` (HTTP/1) or after GOAWAY (HTTP/2), new connections are refused, and what
 * outlives the grace is destroyed and counted. Also the option and server validation of the
 * public entry points.
 */
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { Client } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { ErrorCodes, isEvenlbError } from '../../src/core/errors.js';
import { drain, drainOnSignal, recycleConnections } from '../../src/server/index.js';
import { RetryingH2Client } from './support/h2-client.js';
import { listen, shutdown, waitFor } from './support/servers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

function connectOutcome(port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve('connected');
    });
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
  });
}

describe('drain()', () => {
  it('lets the in-flight HTTP/1 request finish with Connection: close, closes idle connections, refuses new ones', async () => {
    let release: (() => void) | undefined;
    const server = http.createServer((req, res) => {
      if (req.url === '/slow') release = () => res.end('slow done');
      else res.end('ok');
    });
    const port = await listen(server);
    cleanups.push(() => shutdown(server));
    // Tracking starts before the first connection, as drainOnSignal would do at startup.
    const recycler = recycleConnections(server);
    cleanups.push(() => recycler.close());

    const busy = new Client(`http://127.0.0.1:${port}`);
    const idle = new Client(`http://127.0.0.1:${port}`);
    cleanups.push(() => busy.close());
    cleanups.push(() => idle.close());
    expect(await (await idle.request({ path: '/', method: 'GET' })).body.text()).toBe('ok');
    const slow = busy.request({ path: '/slow', method: 'GET' });
    await waitFor(() => release !== undefined, 5000, 'the slow request to arrive');

    const drained = drain(server, { graceMs: 5000, clock: undefined });
    expect(await connectOutcome(port)).toBe('ECONNREFUSED');
    release?.();
    const res = await slow;
    expect(res.headers.connection).toBe('close');
    expect(await res.body.text()).toBe('slow done');

    const result = await drained;
    expect(result).toMatchObject({ connectionsAtStart: 2, inFlightAtStart: 1, destroyed: 0, timedOut: false });
    expect(recycler.stats().closed).toMatchObject({ shutdown: 2 });
    expect(await drain(server)).toBe(result);
  });

  it('destroys what outlives graceMs and reports it', async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200);
      res.write('never finished');
    });
    const recycler = recycleConnections(server);
    cleanups.push(() => recycler.close());
    const port = await listen(server);
    cleanups.push(() => shutdown(server));
    const client = new Client(`http://127.0.0.1:${port}`);
    cleanups.push(() => client.destroy());
    const outcome = client
      .request({ path: '/', method: 'GET' })
      .then((r) => r.body.text())
      .then(
        () => 'completed',
        (err: { code?: string }) => err.code ?? 'error',
      );
    await waitFor(() => recycler.stats().requests === 1, 5000, 'the request to arrive');

    const result = await drain(server, { graceMs: 150 });
    expect(result).toMatchObject({ connectionsAtStart: 1, inFlightAtStart: 1, destroyed: 1, timedOut: true });
    expect(result.elapsedMs).toBeGreaterThanOrEqual(150);
    expect(await outcome).toMatch(/UND_ERR_SOCKET|ECONNRESET/);
  });

  it('HTTP/2: the in-flight stream completes after GOAWAY, the session closes, nothing is destroyed', async () => {
    let release: (() => void) | undefined;
    const server = http2.createServer();
    server.on('stream', (stream, headers) => {
      const answer = () => {
        stream.respond({ ':status': 200 });
        stream.end(headers[':path'] === '/slow' ? 'slow done' : 'ok');
      };
      if (headers[':path'] === '/slow') release = answer;
      else answer();
    });
    const recycler = recycleConnections(server);
    cleanups.push(() => recycler.close());
    const port = await listen(server);
    cleanups.push(() => shutdown(server));
    const client = new RetryingH2Client(`http://127.0.0.1:${port}`);
    cleanups.push(() => client.close());

    expect((await client.get('/')).body).toBe('ok');
    const slow = client.get('/slow', 1);
    await waitFor(() => release !== undefined, 5000, 'the slow stream to arrive');
    const drained = drain(server, { graceMs: 5000 });
    await waitFor(() => recycler.stats().open === 1, 5000, 'GOAWAY to be sent');
    release?.();
    expect((await slow).body).toBe('slow done');
    expect(await drained).toMatchObject({ connectionsAtStart: 1, inFlightAtStart: 1, destroyed: 0, timedOut: false });
    expect(recycler.stats().closed).toMatchObject({ shutdown: 1 });
  });
});

describe('drainOnSignal() in process (exit: false, SIGUSR2 emitted on the process object)', () => {
  it('keeps accepting during closeDelayMs (injected clock), then drains', async () => {
    const clock = new ManualClock();
    const server = http.createServer((_req, res) => res.end('ok'));
    const handle = drainOnSignal(server, {
      signals: ['SIGUSR2'],
      closeDelayMs: 5000,
      graceMs: 1000,
      exit: false,
      clock,
    });
    cleanups.push(() => handle.close());
    const port = await listen(server);
    cleanups.push(() => shutdown(server));

    process.emit('SIGUSR2');
    expect(await connectOutcome(port)).toBe('connected');
    clock.advance(5000);
    await waitFor(() => !server.listening, 5000, 'the listener to close');
    expect(await connectOutcome(port)).toBe('ECONNREFUSED');
    expect(await handle.done).toMatchObject({ destroyed: 0, timedOut: false });
  });

  it('a second signal ends the drain at once, destroying what is left', async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200);
      res.write('never finished');
    });
    const handle = drainOnSignal(server, { signals: ['SIGUSR2'], graceMs: 60_000, exit: false });
    cleanups.push(() => handle.close());
    const port = await listen(server);
    cleanups.push(() => shutdown(server));
    const client = new Client(`http://127.0.0.1:${port}`);
    cleanups.push(() => client.destroy());
    let arrived = false;
    server.on('request', () => (arrived = true));
    const outcome = client.request({ path: '/', method: 'GET' }).then(
      (r) =>
        r.body.text().then(
          () => 'completed',
          () => 'cut',
        ),
      () => 'cut',
    );
    await waitFor(() => arrived, 5000, 'the request to arrive');

    process.emit('SIGUSR2');
    process.emit('SIGUSR2');
    expect(await handle.done).toMatchObject({ inFlightAtStart: 1, destroyed: 1, timedOut: true });
    expect(await outcome).toBe('cut');
    expect(process.listenerCount('SIGUSR2')).toBe(0);
  });
});

describe('validation', () => {
  const cases: { name: string; run: () => unknown; field: string }[] = [
    { name: 'a server that is not an HTTP server', run: () => recycleConnections(net.createServer()), field: 'server' },
    { name: 'not a server at all', run: () => recycleConnections({}), field: 'server' },
    {
      name: 'maxRequestsPerConnection 0',
      run: () => recycleConnections(http.createServer(), { maxRequestsPerConnection: 0 }),
      field: 'maxRequestsPerConnection',
    },
    {
      name: 'an unknown option',
      run: () => recycleConnections(http.createServer(), { maxAgeMs: 10 } as never),
      field: 'maxAgeMs',
    },
    {
      name: 'metrics without a registry',
      run: () => recycleConnections(http.createServer(), { metrics: {} as never }),
      field: 'metrics.registry',
    },
    {
      name: 'drainOnSignal with an unknown signal',
      run: () => drainOnSignal(http.createServer(), { signals: ['SIGKILL' as never] }),
      field: 'signals',
    },
    { name: 'drain with a negative grace', run: () => drain(http.createServer(), { graceMs: -1 }), field: 'graceMs' },
  ];
  for (const c of cases) {
    it(`rejects ${c.name} (EVENLB_INVALID_OPTION naming "${c.field}")`, async () => {
      let caught: unknown;
      try {
        await c.run();
      } catch (err) {
        caught = err;
      }
      expect(isEvenlbError(caught, ErrorCodes.INVALID_OPTION)).toBe(true);
      expect((caught as { details: { field: string } }).details.field).toBe(c.field);
    });
  }

  it('allows one recycler per server; close() detaches and allows another', async () => {
    const server = http.createServer();
    const first = recycleConnections(server, { maxRequestsPerConnection: 5 });
    expect(() => recycleConnections(server, { maxRequestsPerConnection: 6 })).toThrow(
      /already has a connection recycler/,
    );
    await first.close();
    await first.close();
    const second = recycleConnections(server, { maxRequestsPerConnection: 6 });
    expect(second.options.maxRequestsPerConnection).toBe(6);
    await second.close();
    expect(Object.hasOwn(server, 'emit')).toBe(false);
  });
});
