/**
 * A request body on its way to an `h2` upstream, kept so the request can be sent again. The
 * client's bytes are read only while an upstream stream takes them (the client is paused
 * between attempts and while the upstream's flow-control window is full), forwarded as they
 * arrive, and also held — up to the cluster's `retryBufferBytes` — so a retry can replay them
 * to the next stream and then go on with the rest of the client's body. The first byte past
 * that limit drops what is held: from then on the request is no longer `replayable` and the
 * retry policy will not send it again. A request without a body is always replayable. Held
 * bytes are bounded by `retryBufferBytes` plus one read.
 */
import type { ClientHttp2Stream } from 'node:http2';
import type { Readable } from 'node:stream';

export class H2RequestBody {
  readonly #source: Readable | null;
  readonly #limitBytes: number;
  /** What the client has sent so far; undefined once over the limit (no replay). */
  #held: Buffer[] | undefined = [];
  #heldBytes = 0;
  #ended = false;
  #target: ClientHttp2Stream | undefined;
  /** The exchange is over: the rest is read and dropped. */
  #discarding = false;

  /** `source`: the client's body (null: none); `limitBytes`: the most kept for a replay. */
  constructor(source: Readable | null, limitBytes: number) {
    this.#source = source;
    this.#limitBytes = limitBytes;
    if (source === null) return;
    // Paused first, so the 'data' listener does not start the flow before an upstream takes it.
    source.pause();
    source.on('data', (chunk: Buffer) => this.#onData(chunk));
    // A client that goes away is the sink's to report (`onGone`); its stream's error is not ours.
    source.on('error', () => {});
    source.once('end', () => {
      this.#ended = true;
      this.#target?.end();
    });
  }

  /** True when there is no body. */
  get empty(): boolean {
    return this.#source === null;
  }

  /** The whole body so far can be sent again (there is none, or all of it is held). */
  get replayable(): boolean {
    return this.#source === null || this.#held !== undefined;
  }

  /** Sends the body to `up` (opened without END_STREAM): what is held, then the rest as it arrives. */
  attach(up: ClientHttp2Stream): void {
    if (this.#source === null || this.#discarding) return;
    this.#target = up;
    for (const part of this.#held ?? []) up.write(part);
    if (this.#ended) {
      up.end();
      return;
    }
    if (up.writableNeedDrain) up.once('drain', () => this.#resume(up));
    else this.#source.resume();
  }

  /** The current upstream stream is gone: the client is paused until the next `attach`. */
  detach(): void {
    this.#target = undefined;
    if (!this.#discarding) this.#source?.pause();
  }

  /**
   * The client has its answer: the rest of its body is read and dropped, so a paused client does
   * not hold its connection (node:http reads the next request only after this one's body).
   */
  discard(): void {
    this.#discarding = true;
    this.#target = undefined;
    this.#held = undefined;
    if (!this.#ended) this.#source?.resume();
  }

  #resume(up: ClientHttp2Stream): void {
    if (this.#target === up && !this.#discarding) this.#source?.resume();
  }

  #onData(chunk: Buffer): void {
    if (this.#discarding) return;
    const held = this.#held;
    if (held !== undefined) {
      held.push(chunk);
      this.#heldBytes += chunk.length;
      if (this.#heldBytes > this.#limitBytes) {
        this.#held = undefined;
        this.#heldBytes = 0;
      }
    }
    const up = this.#target;
    if (up === undefined || up.closed || up.destroyed) {
      // Nothing takes it now: a replay will send it (if it is held), else it is lost with the attempt.
      this.#source?.pause();
      return;
    }
    if (!up.write(chunk)) {
      this.#source?.pause();
      up.once('drain', () => this.#resume(up));
    }
  }
}
