/**
 * The pods behind a test Service: real HTTP/1.1 servers on distinct loopback addresses
 * (127.0.3.x) that all listen on the SAME port, as a Service's pods do (an EndpointSlice has
 * one port for all its endpoints). Each answers with its address and counts its requests.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface ServicePod {
  readonly address: string;
  /** Requests answered so far. */
  readonly hits: number;
}

export interface ServicePods {
  readonly port: number;
  readonly pods: readonly ServicePod[];
  /** Requests per address since the last `resetHits()`. */
  hits(): Map<string, number>;
  resetHits(): void;
  close(): Promise<void>;
}

/** Starts `count` pods on 127.0.3.1..count, one shared ephemeral port. */
export async function startServicePods(count: number, subnet = '127.0.3'): Promise<ServicePods> {
  const servers: http.Server[] = [];
  const sockets = new Set<Socket>();
  const hits = new Map<string, number>();
  let port = 0;
  for (let i = 1; i <= count; i++) {
    const address = `${subnet}.${i}`;
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        hits.set(address, (hits.get(address) ?? 0) + 1);
        res.setHeader('content-type', 'text/plain');
        res.end(address);
      });
    });
    server.on('connection', (s: Socket) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, address, () => resolve());
    });
    port = (server.address() as AddressInfo).port;
    servers.push(server);
  }
  const pods = servers.map((_, i) => {
    const address = `${subnet}.${i + 1}`;
    return {
      address,
      get hits() {
        return hits.get(address) ?? 0;
      },
    };
  });
  return {
    port,
    pods,
    hits: () => new Map(hits),
    resetHits: () => hits.clear(),
    async close() {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}
