/**
 * A tiny authoritative DNS server on loopback UDP (node:dgram), speaking the real wire format
 * (RFC 1035) for A and AAAA questions, so DNS discovery is tested against real queries. Names
 * in `records` answer with their addresses (TTL 1); a known name without records of the asked
 * type answers NOERROR with no answers (NODATA); an unknown name answers NXDOMAIN. `mode`
 * can switch to `servfail` or `drop` (no answer at all) to play a broken resolver.
 *
 * @example
 * const dns = await TinyDnsServer.start({ 'web.prod.svc.cluster.local': ['127.0.0.2', '127.0.0.3'] });
 * new DnsEndpointSource({ host: 'web.prod.svc.cluster.local', port: 80, servers: [dns.server] });
 */
import { createSocket, type Socket } from 'node:dgram';
import { isIP } from 'node:net';

export type DnsMode = 'answer' | 'servfail' | 'drop';

function ipv4Bytes(a: string): Buffer {
  return Buffer.from(a.split('.').map(Number));
}

function ipv6Bytes(a: string): Buffer {
  const [head = '', tail = ''] = a.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === '' ? [] : tail.split(':');
  const groups = a.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
  const out = Buffer.alloc(16);
  for (const [i, g] of groups.entries()) out.writeUInt16BE(Number.parseInt(g, 16), i * 2);
  return out;
}

export class TinyDnsServer {
  readonly #socket: Socket;
  records: Record<string, string[]>;
  mode: DnsMode = 'answer';
  /** Questions received, as `name/type`. */
  readonly queries: string[] = [];
  readonly port: number;

  private constructor(socket: Socket, records: Record<string, string[]>) {
    this.#socket = socket;
    this.records = records;
    this.port = socket.address().port;
    socket.on('message', (msg, rinfo) => {
      const reply = this.#answer(msg);
      if (reply !== undefined) socket.send(reply, rinfo.port, rinfo.address);
    });
  }

  /** `127.0.0.1:port`, for `Resolver.setServers`. */
  get server(): string {
    return `127.0.0.1:${this.port}`;
  }

  static async start(records: Record<string, string[]> = {}): Promise<TinyDnsServer> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return new TinyDnsServer(socket, records);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#socket.close(() => resolve()));
  }

  #answer(msg: Buffer): Buffer | undefined {
    if (msg.length < 12) return undefined;
    const id = msg.readUInt16BE(0);
    let offset = 12;
    const labels: string[] = [];
    for (;;) {
      const len = msg[offset] ?? 0;
      offset++;
      if (len === 0) break;
      labels.push(msg.subarray(offset, offset + len).toString('ascii'));
      offset += len;
    }
    const qtype = msg.readUInt16BE(offset);
    const question = msg.subarray(12, offset + 4);
    const name = labels.join('.').toLowerCase();
    this.queries.push(`${name}/${qtype === 1 ? 'A' : qtype === 28 ? 'AAAA' : qtype}`);
    if (this.mode === 'drop') return undefined;
    const known = Object.hasOwn(this.records, name);
    const rcode = this.mode === 'servfail' ? 2 : known ? 0 : 3;
    const addresses =
      rcode === 0
        ? (this.records[name] ?? []).filter((a) => (qtype === 1 ? isIP(a) === 4 : qtype === 28 ? isIP(a) === 6 : false))
        : [];
    const header = Buffer.alloc(12);
    header.writeUInt16BE(id, 0);
    header.writeUInt16BE(0x8400 | 0x0100 | rcode, 2); // QR, AA, RD echoed, rcode
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(addresses.length, 6);
    const answers = addresses.map((a) => {
      const rdata = qtype === 1 ? ipv4Bytes(a) : ipv6Bytes(a);
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // pointer to the question name
      rr.writeUInt16BE(qtype, 2);
      rr.writeUInt16BE(1, 4); // class IN
      rr.writeUInt32BE(1, 6); // TTL
      rr.writeUInt16BE(rdata.length, 10);
      return Buffer.concat([rr, rdata]);
    });
    return Buffer.concat([header, question, ...answers]);
  }
}
