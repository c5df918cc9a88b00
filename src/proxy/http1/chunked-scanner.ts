/**
 * Finds where a chunked message body ends (RFC 9112 §7.1) without copying it: the proxy
 * forwards the chunked bytes as they came, so it only has to check them and know where the
 * message stops. Strict — never laxer than Node's own strict parser, so a backend cannot read
 * the body differently: a chunk size is 1–16 hex digits; extensions are `;name` or
 * `;name=value` with token names and values and no whitespace; chunk data is followed by
 * CRLF; trailer fields are `token: value` lines (no whitespace before the colon, no control
 * characters) and never `Content-Length` or `Transfer-Encoding`. Any other byte makes the body
 * malformed (a request gets 400 and its connection closed).
 */
import { TOKEN } from './message-head.js';

const S_SIZE = 0;
const S_EXT_NAME_START = 1;
const S_SIZE_LF = 2;
const S_DATA = 3;
const S_DATA_CR = 4;
const S_DATA_LF = 5;
const S_TRAILER_START = 6;
const S_TRAILER_NAME = 7;
const S_TRAILER_LF = 8;
const S_END_LF = 9;
const S_DONE = 10;
const S_ERROR = 11;
const S_EXT_NAME = 12;
const S_EXT_VALUE_START = 13;
const S_EXT_VALUE = 14;
const S_TRAILER_VALUE = 15;

/** Framing fields that must not appear as trailers. */
const FORBIDDEN_TRAILERS = new Set(['content-length', 'transfer-encoding']);

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

export class ChunkedScanner {
  #state = S_SIZE;
  #digits = 0;
  #size = 0;
  #trailerBytes = 0;
  /** The trailer field name being read (trailers are rare and short). */
  #name = '';
  readonly #maxTrailerBytes: number;

  /** `maxTrailerBytes` bounds the trailer section (and chunk-extension bytes per chunk). */
  constructor(maxTrailerBytes = 16 * 1024) {
    this.#maxTrailerBytes = maxTrailerBytes;
  }

  /** The terminating chunk and trailers have been seen. */
  get done(): boolean {
    return this.#state === S_DONE;
  }

  /** The body is malformed. */
  get failed(): boolean {
    return this.#state === S_ERROR;
  }

  /**
   * Scans `buf[from..to)`; returns the index just past the body when it ends inside this
   * range, `to` when it continues, or -1 when the bytes are malformed.
   */
  scan(buf: Uint8Array, from: number, to: number): number {
    let i = from;
    let state = this.#state;
    while (i < to) {
      if (state === S_DATA) {
        const n = Math.min(this.#size, to - i);
        this.#size -= n;
        i += n;
        if (this.#size === 0) state = S_DATA_CR;
        continue;
      }
      const c = buf[i] as number;
      i++;
      switch (state) {
        case S_SIZE: {
          const h = hexValue(c);
          if (h >= 0) {
            if (++this.#digits > 16) return this.#fail();
            this.#size = this.#size * 16 + h;
          } else if (this.#digits === 0) {
            return this.#fail();
          } else if (c === 13) {
            state = S_SIZE_LF;
          } else if (c === 59 /* ; */) {
            state = S_EXT_NAME_START;
            this.#trailerBytes = 0;
          } else {
            return this.#fail();
          }
          break;
        }
        case S_EXT_NAME_START:
        case S_EXT_VALUE_START:
          if (TOKEN[c] !== 1 || ++this.#trailerBytes > this.#maxTrailerBytes) return this.#fail();
          state = state === S_EXT_NAME_START ? S_EXT_NAME : S_EXT_VALUE;
          break;
        case S_EXT_NAME:
        case S_EXT_VALUE:
          if (c === 13) state = S_SIZE_LF;
          else if (c === 59 /* ; */) state = S_EXT_NAME_START;
          else if (c === 61 /* = */ && state === S_EXT_NAME) state = S_EXT_VALUE_START;
          else if (TOKEN[c] !== 1 || ++this.#trailerBytes > this.#maxTrailerBytes) return this.#fail();
          break;
        case S_SIZE_LF:
          if (c !== 10) return this.#fail();
          this.#digits = 0;
          if (this.#size === 0) {
            state = S_TRAILER_START;
            this.#trailerBytes = 0;
          } else {
            state = S_DATA;
          }
          break;
        case S_DATA_CR:
          if (c !== 13) return this.#fail();
          state = S_DATA_LF;
          break;
        case S_DATA_LF:
          if (c !== 10) return this.#fail();
          state = S_SIZE;
          break;
        case S_TRAILER_START:
          if (c === 13) state = S_END_LF;
          else if (TOKEN[c] !== 1) return this.#fail();
          else {
            state = S_TRAILER_NAME;
            this.#name = String.fromCharCode(c);
          }
          break;
        case S_TRAILER_NAME:
          if (++this.#trailerBytes > this.#maxTrailerBytes) return this.#fail();
          if (c === 58 /* : */) {
            if (FORBIDDEN_TRAILERS.has(this.#name.toLowerCase())) return this.#fail();
            state = S_TRAILER_VALUE;
          } else if (TOKEN[c] !== 1) return this.#fail();
          else this.#name += String.fromCharCode(c);
          break;
        case S_TRAILER_VALUE:
          if (++this.#trailerBytes > this.#maxTrailerBytes) return this.#fail();
          if (c === 13) state = S_TRAILER_LF;
          else if ((c < 32 && c !== 9) || c === 127) return this.#fail();
          break;
        case S_TRAILER_LF:
          if (c !== 10) return this.#fail();
          state = S_TRAILER_START;
          break;
        case S_END_LF:
          if (c !== 10) return this.#fail();
          this.#state = S_DONE;
          return i;
        default:
          return this.#fail();
      }
    }
    this.#state = state;
    return to;
  }

  #fail(): number {
    this.#state = S_ERROR;
    return -1;
  }
}
