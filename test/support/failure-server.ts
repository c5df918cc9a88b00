/**
 * An HTTP/1.1 upstream that fails on purpose, on its own loopback address, for the retry
 * tables of the client and the proxy: `ok` answers 200, `503`/`500` answer that status,
 * `reset-reused` destroys a kept-alive socket on its second request (before any answer), and
 * `refused` is closed before use (a connect is refused).
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import { nextLoopbackAddress } from './loopback-pods.js';
import { listenTracked } from './tracked-server.js';

export type FailureBehaviour = 'ok' | '503' | '500' | 'reset-reused' | 'refused';

export interface FailureServer {
  readonly address: string;
  readonly port: number;
  readonly endpoint: { readonly address: string; readonly port: number };
  /** `address:port`. */
  readonly key: string;
  /** Requests that reached the server (reset ones included). */
  readonly hits: number;
  close(): Promise<void>;
}

export async function startFailureServer(behaviour: FailureBehaviour): Promise<FailureServer> {
  const address = nextLoopbackAddress();
  const perSocket = new WeakMap<Socket, number>();
  let hits = 0;
  const server = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    hits++;
    const n = (perSocket.get(req.socket) ?? 0) + 1;
    perSocket.set(req.socket, n);
    req.resume();
    if (behaviour === 'reset-reused' && n > 1) {
      req.socket.destroy();
      return;
    }
    res.statusCode = behaviour === '503' ? 503 : behaviour === '500' ? 500 : 200;
    res.end(behaviour);
  });
  const tracked = await listenTracked(server, address);
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= tracked.close();
    return closing;
  };
  if (behaviour === 'refused') await close();
  const { port } = tracked;
  return {
    address,
    port,
    endpoint: { address, port },
    key: `${address}:${port}`,
    get hits() {
      return hits;
    },
    close,
  };
}
