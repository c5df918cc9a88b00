/**
 * Splices an accepted client socket to a new connection to `host:port`, byte for byte, as a
 * kube-proxy-style L4 front does: an error on either side destroys the other; the client
 * closing destroys the upstream; the upstream closing ends the client (end(), not destroy():
 * the backend's last response may still be in the client's write buffer). Both sockets are
 * tracked in `sockets` while open, so the front can destroy them on close.
 */
import net from 'node:net';

export function spliceTcp(client: net.Socket, host: string, port: number, sockets: Set<net.Socket>): void {
  const upstream = net.createConnection({ host, port });
  for (const s of [client, upstream]) {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  }
  client.pipe(upstream);
  upstream.pipe(client);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.end());
}
