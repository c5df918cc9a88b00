/**
 * Where a request body ends on the raw HTTP/1.1 data path: a Content-Length countdown, or the
 * strict `ChunkedScanner` for a chunked body (its framing validated as the bytes arrive, so a
 * malformed body is refused before more of it is forwarded). The bytes themselves are forwarded
 * as they are, in their original framing.
 */
import { ChunkedScanner } from './chunked-scanner.js';

/** `end`: bytes of the chunk up to here are body; `done`: the body is complete; `end < 0`: malformed. */
export interface BodyRead {
  end: number;
  done: boolean;
}

export class RequestBodyReader {
  #remaining = 0;
  #scanner: ChunkedScanner | undefined;
  readonly #result: BodyRead = { end: 0, done: false };

  /** A new body: chunked (chunk-size lines up to `maxLineBytes`), else `contentLength` bytes. */
  start(chunked: boolean, contentLength: number, maxLineBytes: number): void {
    this.#scanner = chunked ? new ChunkedScanner(maxLineBytes) : undefined;
    this.#remaining = chunked ? -1 : contentLength;
  }

  /** Reads `chunk` from `from`; the result object is reused. */
  read(chunk: Buffer, from: number): BodyRead {
    const r = this.#result;
    const len = chunk.length;
    const scanner = this.#scanner;
    if (scanner === undefined) {
      const n = Math.min(this.#remaining, len - from);
      this.#remaining -= n;
      r.end = from + n;
      r.done = this.#remaining === 0;
    } else {
      r.end = scanner.scan(chunk, from, len);
      r.done = r.end >= 0 && scanner.done;
    }
    return r;
  }

  /** Forgets the body (the request is over). */
  clear(): void {
    this.#scanner = undefined;
  }
}
