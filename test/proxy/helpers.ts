/**
 * Test harness for the proxy: real HTTP/1.1 and h2c backends, each on its own loopback address,
 * counting the requests they serve; a proxy started in-process from a config object; and
 * bounded load loops (count and time).
 */
import http from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { pino } from 'pino';
import { normalizeProxyConfig } from '../../src/proxy/config/proxy-config.js';
import { ProxyServer } from '../../src/proxy/proxy-server.js';

export interface Backend<Server extends net.Server = http.Server> {
  readonly name: string;
  readonly address: string;
  readonly port: number;
  readonly key: string;
  hits: number;
  inFlight: number;
  /** Last request's headers, for header assertions. */
  lastHeaders: http.IncomingHttpHeaders | undefined;
  readonly server: Server;
  close(): Promise<void>;
}

export interface BackendOptions {
  /** Delay before answering, ms. */
  readonly delayMs?: number;
  readonly handler?: (req: http.IncomingMessage, res: http.ServerResponse) => void;
}

/** Starts an HTTP/1.1 backend on `address` (e.g. 127.0.0.11), ephemeral port. */
export function startBackend(name: string, address: string, options: BackendOptions = {}): Promise<Backend> {
  return serve(http.createServer(), name, address, options);
}

/**
 * Starts an h2c backend on `address`, ephemeral port: node:http2's compatibility API, so the
 * handlers of `startBackend` serve it too (`writeHead`, `write`, `addTrailers`, `end`).
 */
export function startH2Backend(
  name: string,
  address: string,
  options: BackendOptions = {},
): Promise<Backend<http2.Http2Server>> {
  return serve(http2.createServer(), name, address, options);
}

async function serve<Server extends http.Server | http2.Http2Server>(
  server: Server,
  name: string,
  address: string,
  options: BackendOptions,
): Promise<Backend<Server>> {
  const sessions = new Set<http2.Http2Session>();
  server.on('session', (s: http2.Http2Session) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
  });
  const backend: Backend<Server> = {
    name,
    address,
    port: 0,
    key: '',
    hits: 0,
    inFlight: 0,
    lastHeaders: undefined,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        if (server instanceof http.Server) server.closeIdleConnections();
        for (const s of sessions) s.destroy();
      }),
  };
  // node:http2's compatibility request and response offer what the handlers use.
  (server as http.Server).on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    backend.hits++;
    backend.inFlight++;
    backend.lastHeaders = req.headers;
    res.once('close', () => backend.inFlight--);
    if (options.handler !== undefined) return options.handler(req, res);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = (): void => {
        const body = `${name} ${Buffer.concat(chunks).length}\n`;
        res.writeHead(200, { 'content-type': 'text/plain', 'x-backend': name });
        res.end(body);
      };
      if (options.delayMs !== undefined && options.delayMs > 0) setTimeout(answer, options.delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  const port = (server.address() as AddressInfo).port;
  Object.assign(backend, { port, key: `${address}:${port}` });
  return backend;
}

export const quietLogger = pino({ level: 'silent' });

/** Starts a proxy in-process from a raw config object (validated like a file). */
export async function startProxy(config: unknown): Promise<ProxyServer> {
  return ProxyServer.start(normalizeProxyConfig(config), { logger: quietLogger });
}

/** Waits until `check()` is true, polling; throws after `timeoutMs`. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface FetchedText {
  readonly status: number;
  readonly body: string;
  /** The Content-Type header. */
  readonly type: string;
  readonly headers: http.IncomingHttpHeaders;
}

/** `GET path` from 127.0.0.1:`port` on a fresh connection (no agent); resolves with the whole answer. */
export function fetchText(port: number, path: string): Promise<FetchedText> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body,
            type: String(res.headers['content-type']),
            headers: res.headers,
          }),
        );
      })
      .on('error', reject);
  });
}

/** Each backend's share of `total`. */
export function shares(backends: readonly Backend[]): number[] {
  const total = backends.reduce((a, b) => a + b.hits, 0);
  return backends.map((b) => (total === 0 ? 0 : b.hits / total));
}

/** `GET path` to the proxy on `port` through `agent`, with `Host: host`; resolves with the status. */
export function statusOf(port: number, agent: http.Agent, path: string, host = 'svc.test'): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent, headers: { host } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', reject);
  });
}

/** `GET path` over an HTTP/2 session with `:authority`; resolves with the status once the stream ends. */
export function h2StatusOf(session: http2.ClientHttp2Session, path: string, authority = 'svc.test'): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':path': path, ':authority': authority });
    let status = 0;
    req.on('response', (h) => {
      status = Number(h[':status']);
    });
    req.on('error', reject);
    req.resume();
    req.on('end', () => resolve(status));
  });
}

/**
 * A TCP echo server on 127.0.0.1 (every byte sent back); its port. Its close and the
 * destruction of its open sockets are pushed onto `cleanup`.
 */
export async function startTcpEcho(cleanup: (() => Promise<unknown>)[]): Promise<number> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
    s.pipe(s);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanup.push(() => new Promise<void>((r) => server.close(() => r())));
  cleanup.push(async () => {
    for (const s of sockets) s.destroy();
  });
  return (server.address() as AddressInfo).port;
}

export interface H2Answer {
  status: number;
  body: string;
  trailers: Record<string, unknown> | undefined;
}

/**
 * One HTTP/2 request on a fresh h2c session to 127.0.0.1:`port` (`:authority` svc.example, a
 * body when given); its status, body and trailers. Rejects when it has not ended within 5 s.
 */
export function h2Exchange(port: number, method: string, path: string, body?: string): Promise<H2Answer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', reject);
    const req = session.request(
      { ':method': method, ':path': path, ':authority': 'svc.example' },
      { endStream: body === undefined },
    );
    const answer: H2Answer = { status: 0, body: '', trailers: undefined };
    const timer = setTimeout(() => {
      session.destroy();
      reject(new Error(`HTTP/2 ${method} ${path} did not end within 5 s`));
    }, 5000);
    req.on('response', (h) => {
      answer.status = Number(h[':status']);
    });
    req.on('trailers', (t) => {
      answer.trailers = { ...t };
    });
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      answer.body += c;
    });
    req.on('end', () => {
      clearTimeout(timer);
      session.close();
      resolve(answer);
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      session.destroy();
      reject(err);
    });
    if (body !== undefined) req.end(body);
  });
}
