/**
 * Tunnelling after a protocol switch (WebSocket and other `Upgrade`s): once the upstream
 * answered 101 to an upgrade request, the client gets the 101 head (hop-by-hop headers out,
 * `Connection: upgrade` and the upstream's `Upgrade` protocol in) and the two sockets are
 * spliced — bytes both ways with backpressure (`pipe`, and the upstream connection's `pipeTo`:
 * its socket may be read through `onread`), either side closing closes both.
 */
import type { Socket } from 'node:net';
import { downstreamRawHeaders, serializeHeaders } from '../routing/hop-headers.js';
import { named, type ResponseHead } from './message-head.js';

/** The upstream side of a tunnel: its socket, and how its bytes reach another socket. */
export interface TunnelUpstream {
  readonly socket: Socket;
  pipeTo(dest: Socket): void;
}

/**
 * Splices `client` and `upstream`. `requested` is the protocol the client asked for (used when the
 * upstream names none), `rest` the bytes the upstream sent after its 101 head, `early` the
 * bytes the client sent after its request head.
 */
export function spliceUpgrade(
  client: Socket,
  upstream: TunnelUpstream,
  head: ResponseHead,
  requested: string,
  rest: Buffer,
  early: Buffer | undefined,
): void {
  const up = upstream.socket;
  let protocol = requested;
  for (let i = 0; i < head.headers.length; i += 2) {
    const name = head.headers[i] as string;
    if (name.length === 7 && named(name, 'upgrade')) protocol = head.headers[i + 1] as string;
  }
  const list = downstreamRawHeaders(head.headers, '1.1');
  const out = `HTTP/1.1 101 ${head.statusText}\r\n${serializeHeaders(list)}connection: upgrade\r\nupgrade: ${protocol}\r\n\r\n`;
  client.on('error', () => {});
  client.write(out, 'latin1');
  if (rest.length > 0) client.write(rest);
  if (early !== undefined) up.write(early);
  const teardown = (): void => {
    client.destroy();
    up.destroy();
  };
  client.once('close', teardown);
  up.once('close', teardown);
  client.pipe(up);
  upstream.pipeTo(client);
}
