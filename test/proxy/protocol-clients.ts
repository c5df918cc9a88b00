/**
 * One request to the proxy as each kind of client makes it — HTTP/1.1 (node:http, the proxy's
 * own data path), HTTP/1.0 (a raw socket, strictly parsed), h2c and gRPC (node:http2) — with
 * one answer shape, so a test can hold every client protocol to the same table. Every wait is
 * bounded: a client that gets no whole answer within `boundMs` resolves with `outcome: 'timeout'`.
 */
import http from 'node:http';
import http2 from 'node:http2';
import { rawExchange } from './smuggling/clients.js';
import { parseResponses } from './smuggling/strict-http.js';

export type ClientProtocol = 'HTTP/1.1' | 'HTTP/1.0' | 'h2c' | 'gRPC';

export const CLIENT_PROTOCOLS: readonly ClientProtocol[] = ['HTTP/1.1', 'HTTP/1.0', 'h2c', 'gRPC'];

export interface Answer {
  /** HTTP status (0: none arrived). */
  status: number;
  /** `x-evenlb-reason`, when the proxy answered itself. */
  reason: string | undefined;
  /** gRPC only: `grpc-status` from the headers or trailers. */
  grpcStatus: string | undefined;
  headers: Record<string, string>;
  body: string;
  trailers: Record<string, string>;
  /** How the exchange ended: a whole response, a cut (reset, connection closed mid-body), or no answer in time. */
  outcome: 'complete' | 'cut' | 'timeout';
  elapsedMs: number;
}

function blank(): Answer {
  return {
    status: 0,
    reason: undefined,
    grpcStatus: undefined,
    headers: {},
    body: '',
    trailers: {},
    outcome: 'timeout',
    elapsedMs: 0,
  };
}

function flat(h: http.IncomingHttpHeaders | http2.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : String(v);
  return out;
}

/** `method path` with `Host: host` to 127.0.0.1:`port` as `protocol` speaks it. */
export function ask(
  protocol: ClientProtocol,
  port: number,
  host: string,
  path = '/',
  boundMs = 6000,
  method = 'GET',
): Promise<Answer> {
  switch (protocol) {
    case 'HTTP/1.1':
      return askHttp11(port, host, path, boundMs, method);
    case 'HTTP/1.0':
      return askHttp10(port, host, path, boundMs, method);
    default:
      return askH2(port, host, path, protocol === 'gRPC', boundMs, method);
  }
}

function askHttp11(port: number, host: string, path: string, boundMs: number, method: string): Promise<Answer> {
  const t0 = Date.now();
  const a = blank();
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: Answer['outcome']): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      a.outcome = outcome;
      a.elapsedMs = Date.now() - t0;
      resolve(a);
    };
    const req = http.request({ host: '127.0.0.1', port, path, method, agent: false, headers: { host } }, (res) => {
      a.status = res.statusCode ?? 0;
      a.headers = flat(res.headers);
      a.reason = a.headers['x-evenlb-reason'];
      res.setEncoding('latin1');
      res.on('data', (c: string) => (a.body += c));
      res.on('end', () => {
        a.trailers = flat(res.trailers);
        settle('complete');
      });
      res.on('aborted', () => settle('cut'));
      res.on('error', () => settle('cut'));
    });
    const timer = setTimeout(() => {
      req.destroy();
      settle('timeout');
    }, boundMs);
    req.on('error', () => settle(a.status === 0 ? 'cut' : 'cut'));
    req.end();
  });
}

async function askHttp10(port: number, host: string, path: string, boundMs: number, method: string): Promise<Answer> {
  const t0 = Date.now();
  const a = blank();
  const ex = await rawExchange(
    port,
    `${method} ${path} HTTP/1.0\r\nHost: ${host}\r\n\r\n`,
    [method],
    1,
    false,
    boundMs,
  );
  // Without keep-alive the proxy closes after the response: a close-delimited body ends there.
  const parsed = parseResponses(ex.received, [method], true);
  const m = parsed.messages[0];
  a.elapsedMs = Date.now() - t0;
  if (m === undefined) {
    a.outcome = ex.timedOut ? 'timeout' : 'cut';
    return a;
  }
  a.status = Number(m.first);
  for (const [k, v] of m.headers) a.headers[k] = a.headers[k] === undefined ? v : `${a.headers[k]}, ${v}`;
  a.reason = a.headers['x-evenlb-reason'];
  a.body = m.body.toString('latin1');
  a.outcome = parsed.error === undefined ? 'complete' : 'cut';
  return a;
}

function askH2(
  port: number,
  host: string,
  path: string,
  grpc: boolean,
  boundMs: number,
  method: string,
): Promise<Answer> {
  const t0 = Date.now();
  const a = blank();
  return new Promise((resolve) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', () => {});
    let settled = false;
    const settle = (outcome: Answer['outcome']): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      a.outcome = outcome;
      a.elapsedMs = Date.now() - t0;
      session.destroy();
      resolve(a);
    };
    const timer = setTimeout(() => settle('timeout'), boundMs);
    const headers: http2.OutgoingHttpHeaders = { ':method': grpc ? 'POST' : method, ':path': path, ':authority': host };
    if (grpc) Object.assign(headers, { 'content-type': 'application/grpc', te: 'trailers' });
    let stream: http2.ClientHttp2Stream;
    try {
      stream = session.request(headers, { endStream: !grpc });
    } catch {
      settle('cut');
      return;
    }
    if (grpc) stream.end(Buffer.from([0, 0, 0, 0, 0]));
    stream.on('response', (h) => {
      a.status = Number(h[':status']);
      a.headers = flat(h);
      a.reason = a.headers['x-evenlb-reason'];
      a.grpcStatus = a.headers['grpc-status'];
    });
    stream.on('trailers', (t) => {
      a.trailers = flat(t);
      if (a.trailers['grpc-status'] !== undefined) a.grpcStatus = a.trailers['grpc-status'];
    });
    stream.setEncoding('latin1');
    stream.on('data', (c: string) => (a.body += c));
    stream.on('error', () => {});
    stream.once('close', () => settle(stream.rstCode === http2.constants.NGHTTP2_NO_ERROR ? 'complete' : 'cut'));
  });
}
