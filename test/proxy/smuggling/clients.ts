/**
 * Client sides of the smuggling corpus: a raw socket (plain or TLS) that sends bytes and keeps
 * everything it receives, and an HTTP/2 client that opens streams. Both wait on events —
 * enough complete responses, or the connection closing — bounded by a deadline.
 */
import http2 from 'node:http2';
import net, { type Socket } from 'node:net';
import tls from 'node:tls';
import { parseResponses } from './strict-http.js';

export interface RawExchange {
  readonly received: Buffer;
  /** The proxy closed the connection. */
  readonly ended: boolean;
  /** Neither enough responses nor a close within the deadline. */
  readonly timedOut: boolean;
}

/**
 * Sends `bytes` on a new connection to `port` and collects the answer until `responses` whole
 * responses (for `methods`) arrived or the connection closed.
 */
export function rawExchange(
  port: number,
  bytes: string,
  methods: readonly string[],
  responses: number,
  useTls: boolean,
  deadlineMs = 3000,
): Promise<RawExchange> {
  return new Promise((resolve) => {
    const socket: Socket = useTls
      ? tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] })
      : net.connect({ host: '127.0.0.1', port });
    const parts: Buffer[] = [];
    let done = false;
    const finish = (ended: boolean, timedOut: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ received: Buffer.concat(parts), ended, timedOut });
    };
    const timer = setTimeout(() => finish(false, true), deadlineMs);
    socket.on('error', () => {});
    socket.once(useTls ? 'secureConnect' : 'connect', () => socket.write(bytes, 'latin1'));
    socket.on('data', (c: Buffer) => {
      parts.push(c);
      const parsed = parseResponses(Buffer.concat(parts), methods, false);
      if (parsed.messages.length >= responses || parsed.error !== undefined) finish(false, false);
    });
    socket.on('close', () => finish(true, false));
  });
}

export interface H2Request {
  readonly headers: http2.OutgoingHttpHeaders;
  readonly body?: string;
}

export interface H2Result {
  readonly status: number | undefined;
  readonly body: string;
  /** The stream failed (reset, or the session broke). */
  readonly error: string | undefined;
}

/** Opens one HTTP/2 connection (h2c prior knowledge) and sends `requests` concurrently. */
export async function h2Exchange(port: number, requests: readonly H2Request[], deadlineMs = 3000): Promise<H2Result[]> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  try {
    return await Promise.all(
      requests.map(
        (r) =>
          new Promise<H2Result>((resolve) => {
            let status: number | undefined;
            let body = '';
            let settled = false;
            const settle = (error: string | undefined): void => {
              if (settled) return;
              settled = true;
              clearTimeout(timer);
              resolve({ status, body, error });
            };
            const timer = setTimeout(() => settle('timeout'), deadlineMs);
            let stream: http2.ClientHttp2Stream;
            try {
              stream = session.request(r.headers, { endStream: r.body === undefined });
            } catch (err) {
              settle(`request refused: ${(err as Error).message}`);
              return;
            }
            stream.setEncoding('utf8');
            stream.on('response', (h) => {
              status = Number(h[':status']);
            });
            stream.on('data', (c: string) => {
              body += c;
            });
            stream.on('error', (err) => settle(err.message));
            // Settle on 'close' only: a reset after some data still ends the readable side.
            stream.on('close', () => settle(stream.rstCode === 0 ? undefined : `reset ${stream.rstCode}`));
            if (r.body !== undefined) stream.end(r.body);
          }),
      ),
    );
  } finally {
    session.destroy();
  }
}
