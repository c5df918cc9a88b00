/**
 * A test server that can be closed at once: it listens on `address`:0 and tracks its
 * connections, so `close()` destroys whatever is still open (a hung request, a kept-alive
 * socket) before it closes the server, and always settles.
 */
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';

export interface TrackedServer {
  readonly port: number;
  close(): Promise<void>;
}

/** Listens on `address` (port 0), tracking sockets as `event` reports them (`secureConnection` for TLS). */
export async function listenTracked(
  server: Server,
  address = '127.0.0.1',
  event: 'connection' | 'secureConnection' = 'connection',
): Promise<TrackedServer> {
  const sockets = new Set<Socket>();
  server.on(event, (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A port free on `address` now (bound, then released): nothing listens on it, so a connect is
 * refused until someone binds it (a replica binding it on its own address, say).
 */
export async function freePort(address = '127.0.0.1'): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, address, resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
