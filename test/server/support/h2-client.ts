/**
 * Test support: a Node `http2` client that behaves like gRPC's channels when the server ends a
 * session. On GOAWAY it opens a new session for later requests, and it retries a request whose
 * stream the server refused (REFUSED_STREAM, or a session that closed before the stream could
 * start) — such a request was never processed, so a retry is safe.
 */
import http2 from 'node:http2';

const { NGHTTP2_REFUSED_STREAM } = http2.constants;

export interface H2Response {
  readonly status: number;
  readonly body: string;
}

const RETRYABLE_CODES = new Set(['ERR_HTTP2_GOAWAY_SESSION', 'ERR_HTTP2_INVALID_SESSION']);

export class RetryingH2Client {
  readonly #origin: string;
  readonly #options: http2.SecureClientSessionOptions;
  #session: http2.ClientHttp2Session | undefined;
  sessions = 0;
  retries = 0;

  constructor(origin: string, options: http2.SecureClientSessionOptions = {}) {
    this.#origin = origin;
    this.#options = options;
  }

  #current(): http2.ClientHttp2Session {
    const s = this.#session;
    if (s !== undefined && !s.closed && !s.destroyed) return s;
    const session = http2.connect(this.#origin, this.#options);
    session.on('error', () => {});
    this.#session = session;
    this.sessions++;
    return session;
  }

  /** GET `path`, retrying refused streams up to `maxAttempts` times. */
  async get(path: string, maxAttempts = 5): Promise<H2Response> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#once(path);
      } catch (err) {
        if (attempt >= maxAttempts || !isRefused(err)) throw err;
        this.retries++;
      }
    }
  }

  #once(path: string): Promise<H2Response> {
    return new Promise((resolve, reject) => {
      let req: http2.ClientHttp2Stream;
      try {
        req = this.#current().request({ ':path': path });
      } catch (err) {
        reject(err);
        return;
      }
      let status = 0;
      const chunks: Buffer[] = [];
      req.on('response', (headers) => {
        status = Number(headers[':status']);
      });
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve({ status, body: Buffer.concat(chunks).toString() }));
      req.on('error', (err: Error & { rstCode?: number }) => {
        if (req.rstCode === NGHTTP2_REFUSED_STREAM) Object.assign(err, { refused: true });
        reject(err);
      });
      req.end();
    });
  }

  close(): Promise<void> {
    const s = this.#session;
    this.#session = undefined;
    if (s === undefined || s.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      s.once('close', () => resolve());
      if (!s.closed) s.close();
    });
  }
}

function isRefused(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: string; refused?: boolean; message?: string };
  return e.refused === true || RETRYABLE_CODES.has(e.code ?? '') || /NGHTTP2_REFUSED_STREAM/.test(e.message ?? '');
}
