/**
 * Test harness for the server-side sidecar: plain apps that know nothing of evenlb (node:http
 * or node:http2 h2c only, each on its own loopback address), sidecars started in-process from
 * the sidecar options (the same path as `evenlb proxy --sidecar`, with its app check wired into
 * `/readyz`), a watched `file:///` list of the Service's endpoints rewritten as an
 * EndpointSlice would be, and a kube-proxy-like front that pins each new connection to a
 * random pod (seeded) and can be scaled out.
 */
import { renameSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { systemClock } from '../../src/core/clock.js';
import type { EndpointInput } from '../../src/core/endpoint.js';
import { SeededRandom } from '../../src/core/random.js';
import { ProxyServer } from '../../src/proxy/proxy-server.js';
import { AppHealth } from '../../src/proxy/sidecar/app-health.js';
import { parseSidecarOptions, SIDECAR_LISTENER, sidecarSetup } from '../../src/proxy/sidecar/sidecar-config.js';
import { spliceTcp } from '../support/tcp-splice.js';
import { quietLogger } from './helpers.js';

/** A plain app: counts what it serves; `delayMs` holds each answer (streams stay in flight). */
export interface PlainApp {
  readonly address: string;
  readonly port: number;
  readonly protocol: 'http1' | 'h2';
  requests: number;
  /** The request headers of the last request. */
  lastHeaders: Record<string, string | string[] | undefined>;
  close(): Promise<void>;
}

export async function startPlainApp(
  address: string,
  options: { protocol?: 'http1' | 'h2'; delayMs?: number; name?: string } = {},
): Promise<PlainApp> {
  const protocol = options.protocol ?? 'http1';
  const name = options.name ?? address;
  const app = {
    address,
    port: 0,
    protocol,
    requests: 0,
    lastHeaders: {} as Record<string, string | string[] | undefined>,
    close: async () => {},
  };
  const answer = (headers: Record<string, string | string[] | undefined>, reply: (body: string) => void): void => {
    app.requests++;
    app.lastHeaders = headers;
    if (options.delayMs === undefined) reply(`${name}\n`);
    else setTimeout(() => reply(`${name}\n`), options.delayMs);
  };
  let server: http.Server | http2.Http2Server;
  const sockets = new Set<net.Socket>();
  if (protocol === 'h2') {
    const h2 = http2.createServer();
    h2.on('stream', (stream, headers) => {
      stream.on('error', () => {});
      answer(headers, (body) => {
        if (stream.destroyed) return;
        stream.respond({ ':status': 200, 'content-type': 'text/plain' });
        stream.end(body);
      });
    });
    server = h2;
  } else {
    server = http.createServer((req, res) => {
      req.resume();
      answer(req.headers, (body) => res.writeHead(200, { 'content-type': 'text/plain' }).end(body));
    });
    (server as http.Server).keepAliveTimeout = 60_000;
  }
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  app.port = (server.address() as AddressInfo).port;
  app.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
    });
  return app;
}

/** A sidecar in-process: the proxy built from sidecar options, with the app check gating `/readyz`. */
export interface TestSidecar {
  readonly address: string;
  readonly proxy: ProxyServer;
  readonly health: AppHealth;
  readonly port: number;
  close(): Promise<void>;
}

/** Starts a sidecar from raw sidecar options (validated like the flags and the YAML form). */
export async function startSidecar(input: Record<string, unknown>, seed = 1): Promise<TestSidecar> {
  const setup = sidecarSetup(parseSidecarOptions({ admin: '127.0.0.1:0', logLevel: 'silent', ...input }));
  const health = new AppHealth(setup.app, setup.appCheck, systemClock);
  health.start();
  const proxy = await ProxyServer.start(setup.config, {
    logger: quietLogger,
    random: new SeededRandom(seed),
    readiness: health,
  });
  return {
    address: String(input.listen).replace(/:[0-9]+$/, ''),
    proxy,
    health,
    port: proxy.listenerPort(SIDECAR_LISTENER) as number,
    async close() {
      await proxy.close();
      await health.close();
    },
  };
}

/** The Service's endpoint list as a watched file, replaced atomically (as an EndpointSlice update). */
export class EndpointsFile {
  readonly path: string;
  #version = 0;

  constructor(path: string) {
    this.path = path;
    this.write([]);
  }

  get uri(): string {
    return `file://${this.path}`;
  }

  write(endpoints: readonly EndpointInput[]): void {
    const tmp = `${this.path}.${++this.#version}.tmp`;
    writeFileSync(tmp, JSON.stringify(endpoints));
    renameSync(tmp, this.path);
  }
}

/** The endpoint of a sidecar as its Service lists it. */
export function endpointOf(s: TestSidecar, terminating = false): EndpointInput {
  return { address: s.address, port: s.port, conditions: { ready: !terminating, serving: true, terminating } };
}

/**
 * kube-proxy's iptables mode for a test: each new connection goes to one of the ready
 * backends, uniformly at random (seeded), and stays there; `add` scales out, `setReady` takes a
 * backend out of the rules (new connections only). Bytes are piped both ways.
 */
export class PinningFront {
  readonly #random: SeededRandom;
  readonly #backends: { host: string; port: number; ready: boolean; live: number; placed: number }[] = [];
  readonly #sockets = new Set<net.Socket>();
  readonly #server = net.createServer((client) => this.#connect(client));

  constructor(seed: number) {
    this.#random = new SeededRandom(seed);
  }

  async listen(host = '127.0.0.1'): Promise<number> {
    await new Promise<void>((resolve) => this.#server.listen(0, host, resolve));
    return (this.#server.address() as AddressInfo).port;
  }

  add(host: string, port: number): void {
    this.#backends.push({ host, port, ready: true, live: 0, placed: 0 });
  }

  setReady(host: string, ready: boolean): void {
    for (const b of this.#backends) if (b.host === host) b.ready = ready;
  }

  /** Client connections open now to each backend, in the order added. */
  get live(): number[] {
    return this.#backends.map((b) => b.live);
  }

  /** Connections placed on each backend so far. */
  get placed(): number[] {
    return this.#backends.map((b) => b.placed);
  }

  #connect(client: net.Socket): void {
    const ready = this.#backends.filter((b) => b.ready);
    const b = ready[this.#random.int(ready.length)];
    if (b === undefined) {
      client.destroy();
      return;
    }
    b.placed++;
    b.live++;
    client.once('close', () => {
      b.live--;
    });
    spliceTcp(client, b.host, b.port, this.#sockets);
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
