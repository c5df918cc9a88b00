/**
 * A raw TCP backend for the smuggling corpus: it records every byte each socket receives,
 * parses the stream itself with the strict parser, and answers each request it parses —
 * normally with a 200 whose body echoes what it saw (`{case, seq, path}`), or, for a path
 * `/r/<mode>`, with one of the hostile responses in `response-modes.ts`. Requests without the
 * corpus' `x-case` header, paths containing `smuggled`, framing or forwarding headers the
 * proxy should have written differently, and streams that stop parsing are all recorded as
 * violations.
 */
import net, { type AddressInfo, type Socket } from 'node:net';
import { hostileResponse } from './response-modes.js';
import { header, type ParsedMessage, parseRequests } from './strict-http.js';

export interface BackendRequest {
  readonly caseId: string;
  readonly seq: string;
  readonly method: string;
  readonly path: string;
  readonly socket: number;
  /** Lower-cased header names with their values, as received. */
  readonly headers: readonly [string, string][];
}

export interface RecordingBackend {
  readonly port: number;
  readonly requests: BackendRequest[];
  readonly violations: string[];
  close(): Promise<void>;
}

/** The JSON body every normal response carries: which request the backend answered. */
export function echoBody(m: ParsedMessage): string {
  return JSON.stringify({ case: header(m, 'x-case') ?? '', seq: header(m, 'x-seq') ?? '', path: m.second });
}

function checkForwarded(m: ParsedMessage, violations: string[], where: string): void {
  const count = (n: string): number => m.headers.filter(([h]) => h === n).length;
  for (const n of ['host', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'via']) {
    if (count(n) !== 1) violations.push(`${where}: ${count(n)} ${n} headers`);
  }
  // The corpus' listeners trust no client: the client's own forwarding headers never arrive.
  if (header(m, 'x-forwarded-for') !== '127.0.0.1')
    violations.push(`${where}: x-forwarded-for ${header(m, 'x-forwarded-for')}`);
  if (count('forwarded') + count('x-real-ip') > 0) violations.push(`${where}: a client Forwarded/X-Real-IP arrived`);
}

/**
 * Starts the backend on `address`. `trustedCases`: case ids whose requests come through a
 * listener that trusts forwarding headers (their client-sent ones are expected to arrive).
 */
export async function startRecordingBackend(
  address = '127.0.0.1',
  trustedCases: ReadonlySet<string> = new Set(),
): Promise<RecordingBackend> {
  const requests: BackendRequest[] = [];
  const violations: string[] = [];
  const sockets = new Set<Socket>();
  let socketCount = 0;
  const server = net.createServer((socket) => {
    const id = ++socketCount;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buf = Buffer.alloc(0);
    let answered = 0;
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const parsed = parseRequests(buf);
      for (const m of parsed.messages.slice(answered)) {
        answered++;
        const where = `socket ${id} request ${answered} ${m.first} ${m.second}`;
        const caseId = header(m, 'x-case');
        if (caseId === undefined || m.second.includes('smuggled')) {
          violations.push(`${where}: a request the client did not send (smuggled)`);
        }
        if (!trustedCases.has(caseId ?? '')) checkForwarded(m, violations, where);
        requests.push({
          caseId: caseId ?? '',
          seq: header(m, 'x-seq') ?? '',
          method: m.first,
          path: m.second,
          socket: id,
          headers: m.headers,
        });
        if (socket.destroyed) continue;
        const mode = /^\/r\/([a-z0-9-]+)/.exec(m.second)?.[1];
        const body = echoBody(m);
        if (mode !== undefined) {
          hostileResponse(mode, body, m.first === 'HEAD', socket);
        } else {
          const text = m.first === 'HEAD' ? '' : body;
          socket.write(
            `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${text}`,
          );
        }
      }
      if (parsed.error !== undefined) {
        violations.push(`socket ${id}: stream stopped parsing: ${parsed.error}`);
        socket.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    violations,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
