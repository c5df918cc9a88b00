/**
 * Test support: a tiny TCP front that models kube-proxy's iptables mode — each new connection
 * goes to one backend (chosen by `place` for the first connections, then uniformly at random
 * with a seeded generator) and stays there. Bytes are piped both ways; an end or error on one
 * side ends the other, so a backend closing a keep-alive connection is seen by the client.
 */
import net from 'node:net';
import { SeededRandom } from '../../../src/core/random.js';
import { spliceTcp } from '../../support/tcp-splice.js';

export interface FrontBackend {
  readonly host: string;
  readonly port: number;
}

export class RandomFront {
  readonly server: net.Server;
  /** Connections sent to each backend, by index. */
  readonly placed: number[];
  /** Client connections open now to each backend, by index. */
  readonly live: number[];
  readonly #backends: readonly FrontBackend[];
  readonly #random: SeededRandom;
  readonly #place: number[];
  readonly #sockets = new Set<net.Socket>();

  constructor(backends: readonly FrontBackend[], seed: number, place: readonly number[] = []) {
    this.#backends = backends;
    this.#random = new SeededRandom(seed);
    this.#place = [...place];
    this.placed = backends.map(() => 0);
    this.live = backends.map(() => 0);
    this.server = net.createServer((client) => this.#connect(client));
  }

  async listen(host = '127.0.0.1'): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, host, resolve));
    return (this.server.address() as net.AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  #connect(client: net.Socket): void {
    const i = this.#place.shift() ?? this.#random.int(this.#backends.length);
    const b = this.#backends[i] as FrontBackend;
    this.placed[i] = (this.placed[i] ?? 0) + 1;
    this.live[i] = (this.live[i] ?? 0) + 1;
    client.once('close', () => {
      this.live[i] = (this.live[i] ?? 0) - 1;
    });
    spliceTcp(client, b.host, b.port, this.#sockets);
  }
}
