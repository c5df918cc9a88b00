/**
 * Takes the chunked framing off a response body for clients that do not get the upstream's
 * bytes as they are (HTTP/2 streams, node:http responses that frame the body themselves):
 * chunk data comes out as subarrays of the input (no copy), the trailer section as a flat
 * name/value list. The input has already passed the strict `ChunkedScanner` (an upstream
 * connection fails the exchange on malformed chunking before a byte reaches the sink), so this
 * only has to follow well-formed framing.
 */

const S_SIZE = 0;
const S_SIZE_LINE = 1;
const S_DATA = 2;
const S_DATA_END = 3;
const S_TRAILER = 4;
const S_DONE = 5;

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

export class ChunkedDecoder {
  #state = S_SIZE;
  #size = 0;
  /** The trailer line being read (trailers are rare and short). */
  #line = '';
  /** Trailer fields, name/value pairs. */
  readonly trailers: string[] = [];

  get done(): boolean {
    return this.#state === S_DONE;
  }

  /** Decodes `buf`, calling `data` with each piece of chunk data. */
  decode(buf: Buffer, data: (piece: Buffer) => void): void {
    const len = buf.length;
    let i = 0;
    while (i < len && this.#state !== S_DONE) {
      switch (this.#state) {
        case S_SIZE: {
          const v = hexValue(buf[i] as number);
          if (v >= 0) {
            this.#size = this.#size * 16 + v;
            i++;
          } else this.#state = S_SIZE_LINE;
          break;
        }
        case S_SIZE_LINE:
          // Extensions and CR up to the line's LF.
          if (buf[i++] === 10) this.#state = this.#size === 0 ? S_TRAILER : S_DATA;
          break;
        case S_DATA: {
          const n = Math.min(this.#size, len - i);
          data(buf.subarray(i, i + n));
          i += n;
          this.#size -= n;
          if (this.#size === 0) this.#state = S_DATA_END;
          break;
        }
        case S_DATA_END:
          if (buf[i++] === 10) this.#state = S_SIZE;
          break;
        default: {
          const c = buf[i++] as number;
          if (c !== 10) {
            if (c !== 13) this.#line += String.fromCharCode(c);
            break;
          }
          const line = this.#line;
          this.#line = '';
          if (line === '') {
            this.#state = S_DONE;
            break;
          }
          const colon = line.indexOf(':');
          this.trailers.push(line.slice(0, colon), line.slice(colon + 1).trim());
        }
      }
    }
  }
}
