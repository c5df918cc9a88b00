/**
 * The cluster runs undici's controller-style handlers only. Every handler it hands a real undici
 * `Client` (one per attempt) has `onRequestStart` and none of the deprecated callback-style
 * methods (`onConnect`, `onHeaders`, `onData`, `onComplete`, `onError`, `onUpgrade`,
 * `onBodySent`), and none of those is ever called on it — checked on `Client.prototype.dispatch`
 * while requests of every kind go through a `BalancedAgent`: callback-style callers
 * (`undici.request`, `undici.fetch`, `undici.stream` with a slow consumer, `undici.upgrade`),
 * a controller-style caller (a `compose()`d interceptor), a 503 retried elsewhere, a refused
 * connection retried elsewhere, an abort mid-body, and HTTP/2 (h2c).
 */
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { Writable } from 'node:stream';
import { Client, type Dispatcher, fetch, request, stream, upgrade } from 'undici';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { RequestController } from '../../src/cluster/request-controller.js';
import { BalancedAgent, StaticEndpointSource } from '../../src/index.js';
import { nextLoopbackAddress, type Pod, startPods, stopPods } from '../support/loopback-pods.js';

const LEGACY = ['onConnect', 'onHeaders', 'onData', 'onComplete', 'onError', 'onUpgrade', 'onBodySent'] as const;
const BIG_BYTES = 4 * 1024 * 1024;

/** What the spy on `Client.prototype.dispatch` saw. */
const seen = { handlers: 0, problems: [] as string[], legacyCalls: [] as string[] };
const originalDispatch = Client.prototype.dispatch;

/** Handlers already trapped (a retried request is dispatched again). */
const trapped = new WeakSet<object>();

/** Checks a handler the cluster hands a Client, and traps the callback-style names on it. */
function inspect(handler: Dispatcher.DispatchHandler): void {
  seen.handlers++;
  if (trapped.has(handler)) return;
  trapped.add(handler);
  const name = handler.constructor.name;
  if (typeof handler.onRequestStart !== 'function') seen.problems.push(`${name} has no onRequestStart`);
  for (const method of LEGACY) {
    if (method in handler) {
      seen.problems.push(`${name} has ${method}`);
      continue;
    }
    // Called only if undici took the handler for the callback style.
    Object.defineProperty(handler, method, {
      configurable: true,
      value: () => {
        seen.legacyCalls.push(`${name}.${method}`);
        return true;
      },
    });
  }
}

let pauses = 0;
const originalPause = RequestController.prototype.pause;

/** One HTTP/1.1 server: `/ok`, `/big` (4 MiB), `/hang` (a head and one chunk, then nothing), and an echo upgrade. */
async function startServer(): Promise<{ server: http.Server; endpoint: { address: string; port: number } }> {
  const server = http.createServer((req, res) => {
    req.resume();
    if (req.url === '/big') {
      res.end(Buffer.alloc(BIG_BYTES, 120));
    } else if (req.url === '/hang') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
    } else {
      req.on('end', () => res.end('ok'));
    }
  });
  server.on('upgrade', (_req, socket: Socket) => {
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n');
    socket.pipe(socket);
  });
  const address = nextLoopbackAddress();
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  return { server, endpoint: { address, port: (server.address() as AddressInfo).port } };
}

describe('the cluster speaks only the controller handler style to undici', () => {
  let main: Awaited<ReturnType<typeof startServer>>;
  let h2: http2.Http2Server;
  let h2Port = 0;
  let pods: Pod[] = [];
  let refusedPort = 0;
  let agent: BalancedAgent;

  beforeAll(async () => {
    Client.prototype.dispatch = function (this: Client, opts, handler) {
      inspect(handler);
      return originalDispatch.call(this, opts, handler);
    };
    RequestController.prototype.pause = function (this: RequestController) {
      pauses++;
      originalPause.call(this);
    };
    main = await startServer();
    pods = await startPods(2);
    (pods[0] as Pod).setStatus(503);
    h2 = http2.createServer((req, res) => req.on('end', () => res.end('h2')).resume());
    await new Promise<void>((resolve) => h2.listen(0, '127.0.0.1', resolve));
    h2Port = (h2.address() as AddressInfo).port;
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    refusedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    agent = new BalancedAgent({
      policy: 'round-robin',
      routes: {
        'main.test:80': new StaticEndpointSource([main.endpoint]),
        'retry.test:80': { target: new StaticEndpointSource(pods.map((p) => p.endpoint)), retryIdempotent: 1 },
        'refused.test:80': new StaticEndpointSource([{ address: '127.0.0.1', port: refusedPort }, main.endpoint]),
        'h2.test:80': { target: new StaticEndpointSource([{ address: '127.0.0.1', port: h2Port }]), h2c: true },
      },
    });
  });

  afterAll(async () => {
    Client.prototype.dispatch = originalDispatch;
    RequestController.prototype.pause = originalPause;
    await agent.close();
    await stopPods(pods);
    main.server.closeAllConnections();
    await new Promise<void>((resolve) => main.server.close(() => resolve()));
    await new Promise<void>((resolve) => h2.close(() => resolve()));
  });

  test('undici.request and undici.fetch (callback-style callers)', async () => {
    const res = await request('http://main.test/ok', { dispatcher: agent });
    expect([res.statusCode, await res.body.text()]).toEqual([200, 'ok']);
    const f = await fetch('http://main.test/ok', { dispatcher: agent, method: 'POST', body: 'x' });
    expect([f.status, await f.text()]).toEqual([200, 'ok']);
  });

  test('a compose()d interceptor (a controller-style caller)', async () => {
    const composed = agent.compose((dispatch) => (opts, handler) => dispatch(opts, handler));
    const res = await request('http://main.test/ok', { dispatcher: composed });
    expect(await res.body.text()).toBe('ok');
  });

  test('a 503 and a refused connection are retried on the other endpoint', async () => {
    for (let i = 0; i < 4; i++) {
      const res = await request('http://retry.test/r', { dispatcher: agent });
      expect(res.statusCode).toBe(200);
      await res.body.text();
      const r = await request('http://refused.test/ok', { dispatcher: agent });
      expect(await r.body.text()).toBe('ok');
    }
    expect((pods[0] as Pod).requests).toBeGreaterThan(0);
    expect(agent.stats().routes.find((r) => r.name === 'retry.test:80')?.retries).toBeGreaterThan(0);
    expect(agent.stats().routes.find((r) => r.name === 'refused.test:80')?.retries).toBeGreaterThan(0);
  });

  test('a slow consumer pauses the response (undici.stream): every byte arrives', async () => {
    let bytes = 0;
    const pausesBefore = pauses;
    await stream('http://main.test/big', { dispatcher: agent, method: 'GET' }, () => {
      return new Writable({
        highWaterMark: 16 * 1024,
        write(chunk: Buffer, _enc, done) {
          bytes += chunk.length;
          setImmediate(done);
        },
      });
    });
    expect(bytes).toBe(BIG_BYTES);
    expect(pauses).toBeGreaterThan(pausesBefore);
  });

  test('an abort mid-body fails the request with the abort reason', async () => {
    const controller = new AbortController();
    const res = await request('http://main.test/hang', { dispatcher: agent, signal: controller.signal });
    const first = await new Promise<Buffer>((resolve) => res.body.once('data', resolve));
    expect(String(first)).toBe('partial');
    controller.abort(new Error('caller gave up'));
    await expect(res.body.text()).rejects.toThrow(/caller gave up|aborted/);
    const route = agent.stats().routes.find((r) => r.name === 'main.test:80');
    expect(route?.inFlight).toBe(0);
  });

  test('undici.upgrade hands over the socket (onRequestUpgrade)', async () => {
    const { socket, headers } = await upgrade('http://main.test/u', { dispatcher: agent, protocol: 'echo' });
    expect(headers.upgrade).toBe('echo');
    socket.write('ping');
    const echoed = await new Promise<Buffer>((resolve) => socket.once('data', resolve));
    expect(String(echoed)).toBe('ping');
    socket.destroy();
  });

  test('HTTP/2 (h2c)', async () => {
    const res = await request('http://h2.test/', { dispatcher: agent });
    expect(await res.body.text()).toBe('h2');
  });

  test('no handler given to a Client had or was called with a callback-style method', () => {
    // One per attempt: at least every request above, the retries and the h2 one.
    expect(seen.handlers).toBeGreaterThanOrEqual(14);
    expect(seen.problems).toEqual([]);
    expect(seen.legacyCalls).toEqual([]);
  });
});
