/**
 * Loopback "pods" for integration tests: real HTTP/1.1 or HTTPS servers, each on its own
 * 127.0.0.x address, that record what a client did to them — requests (with Host, SNI and the
 * server-side socket they arrived on), requests per socket, sockets opened and closed (with
 * times) — and that can answer slowly, fail with a status, or be killed (every socket
 * destroyed, listener closed) to play a crashed Pod.
 *
 * @example
 * const pods = await startPods(4);
 * const source = new StaticEndpointSource(pods.map((p) => p.endpoint));
 * ...
 * expect(pods[0].requests).toBe(25);
 * await stopPods(pods);
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterEach } from 'vitest';

export interface PodRequest {
  readonly method: string;
  readonly url: string;
  readonly host: string | undefined;
  /** TLS SNI the client sent (HTTPS pods). */
  readonly servername: string | undefined;
  /** Server-side socket id (1, 2, ... per pod). */
  readonly socketId: number;
  /** ALPN protocol of the socket (HTTPS pods). */
  readonly alpn: string | undefined;
  readonly body: string;
}

export interface PodOptions {
  /** Bind address; default the next free 127.0.0.x. */
  readonly address?: string;
  /** Serve HTTPS with this key and certificate. */
  readonly tls?: { readonly key: string; readonly cert: string };
  /** Delay before answering (ms); default 0. A function may vary it per request. */
  readonly delayMs?: number | ((req: http.IncomingMessage) => number);
  /** Status to answer; default 200. */
  readonly status?: number;
  /** Server keep-alive timeout (ms); default Node's (5 s). */
  readonly keepAliveTimeoutMs?: number;
  /** Builds the response body; default `"<address>\n"`. */
  readonly body?: (req: http.IncomingMessage, body: string) => string;
}

export interface Pod {
  readonly name: string;
  readonly address: string;
  readonly port: number;
  /** `{ address, port }` for endpoint sources. */
  readonly endpoint: { address: string; port: number };
  readonly server: http.Server;
  readonly log: PodRequest[];
  /** Requests answered so far. */
  readonly requests: number;
  /** Requests per server-side socket id. */
  readonly requestsPerSocket: Map<number, number>;
  /** Sockets accepted, ever. */
  readonly socketsOpened: number;
  /** Sockets open now. */
  readonly openSockets: number;
  /** Close times (performance.now()) per socket id. */
  readonly closedAt: Map<number, number>;
  /** Requests currently being answered. */
  readonly inFlight: number;
  /** Sets the answer status for later requests. */
  setStatus(status: number): void;
  /** Resolves once `n` requests are in flight at the same time. */
  waitForInFlight(n: number, timeoutMs?: number): Promise<void>;
  /** Crashes the pod: destroys every socket and stops listening. */
  kill(): Promise<void>;
  close(): Promise<void>;
}

let nextHost = 2;

/** A fresh 127.0.0.x address (x cycles 2..254; 127.0.1.x after). */
export function nextLoopbackAddress(): string {
  const n = nextHost++;
  return n <= 254 ? `127.0.0.${n}` : `127.0.1.${(n - 253) % 254}`;
}

export async function startPod(options: PodOptions = {}): Promise<Pod> {
  const address = options.address ?? nextLoopbackAddress();
  const log: PodRequest[] = [];
  const requestsPerSocket = new Map<number, number>();
  const closedAt = new Map<number, number>();
  const sockets = new Set<Socket>();
  const socketIds = new WeakMap<Socket, number>();
  let socketSeq = 0;
  let status = options.status ?? 200;
  let inFlight = 0;
  const inFlightWaiters = new Set<() => void>();
  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const socket = req.socket;
      const socketId = socketIds.get(socket) ?? 0;
      requestsPerSocket.set(socketId, (requestsPerSocket.get(socketId) ?? 0) + 1);
      const tlsSocket = socket as TLSSocket;
      const body = Buffer.concat(chunks).toString('utf8');
      log.push({
        method: req.method ?? '',
        url: req.url ?? '',
        host: req.headers.host,
        servername: typeof tlsSocket.servername === 'string' ? tlsSocket.servername : undefined,
        socketId,
        alpn: typeof tlsSocket.alpnProtocol === 'string' ? tlsSocket.alpnProtocol : undefined,
        body,
      });
      inFlight++;
      for (const w of inFlightWaiters) w();
      const delay = typeof options.delayMs === 'function' ? options.delayMs(req) : (options.delayMs ?? 0);
      const answer = () => {
        inFlight--;
        if (res.destroyed) return;
        res.statusCode = status;
        res.setHeader('content-type', 'text/plain');
        res.end(options.body === undefined ? `${address}\n` : options.body(req, body));
      };
      if (delay > 0) setTimeout(answer, delay);
      else answer();
    });
  };
  const server = options.tls
    ? https.createServer({ key: options.tls.key, cert: options.tls.cert, ALPNProtocols: ['http/1.1'] }, onRequest)
    : http.createServer(onRequest);
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  server.on(options.tls ? 'secureConnection' : 'connection', (socket: Socket) => {
    const id = ++socketSeq;
    socketIds.set(socket, id);
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      closedAt.set(id, performance.now());
    });
  });
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, address, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  let closed = false;
  const pod: Pod = {
    name: `pod-${address}`,
    address,
    port,
    endpoint: { address, port },
    server,
    log,
    get requests() {
      return log.length;
    },
    requestsPerSocket,
    get socketsOpened() {
      return socketSeq;
    },
    get openSockets() {
      return sockets.size;
    },
    closedAt,
    get inFlight() {
      return inFlight;
    },
    setStatus(s: number) {
      status = s;
    },
    waitForInFlight(n: number, timeoutMs = 10_000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (inFlight >= n) {
            inFlightWaiters.delete(check);
            clearTimeout(timer);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          inFlightWaiters.delete(check);
          reject(new Error(`${address}: ${inFlight} in flight, waited for ${n}`));
        }, timeoutMs);
        inFlightWaiters.add(check);
        check();
      });
    },
    async kill() {
      closed = true;
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    async close() {
      if (closed) return;
      closed = true;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return pod;
}

/** Starts `n` pods, each on its own loopback address. */
export async function startPods(n: number, options: Omit<PodOptions, 'address'> = {}): Promise<Pod[]> {
  const pods: Pod[] = [];
  for (let i = 0; i < n; i++) pods.push(await startPod(options));
  return pods;
}

/** Closes every pod. */
export async function stopPods(pods: readonly Pod[]): Promise<void> {
  await Promise.all(pods.map((p) => p.close()));
}

/** What one client test starts: its pods and the agent under test. */
export interface PodsAndAgent<A extends { close(): Promise<unknown> }> {
  pods: Pod[];
  agent: A | undefined;
}

/**
 * A holder for each test's pods and agent, emptied after every test of the calling suite:
 * the agent is closed first (gracefully), then the pods are stopped.
 *
 * @example
 * const t = podsAndAgent<BalancedAgent>();
 * test('...', async () => {
 *   t.pods = await startPods(3);
 *   t.agent = new BalancedAgent({ routes: { [ROUTE]: new StaticEndpointSource(t.pods.map((p) => p.endpoint)) } });
 * });
 */
export function podsAndAgent<A extends { close(): Promise<unknown> }>(): PodsAndAgent<A> {
  const held: PodsAndAgent<A> = { pods: [], agent: undefined };
  afterEach(async () => {
    await held.agent?.close();
    held.agent = undefined;
    await stopPods(held.pods);
    held.pods = [];
  });
  return held;
}

/** Polls `check` until it returns true or `timeoutMs` passes (then throws with `what`). */
export async function waitFor(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
