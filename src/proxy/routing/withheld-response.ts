/**
 * A response withheld from the client while a retry of its request will really be made — the
 * one rule both upstream exchanges (HTTP/1.1 and HTTP/2) follow for `retries.on` statuses. A
 * response is withheld only when the cluster's one retry policy says a retry would be handed
 * out now (`attempt.wouldRetry`) and the cluster buffers retried responses at all
 * (`retryBufferBytes` > 0); its body is then kept up to `retryBufferBytes`. A body that
 * outgrows the buffer means the response is released to the client as it is and not retried;
 * a retry that cannot be made after all (the target disappeared, the cluster closed, the
 * retries were used up) releases it too — status, headers, body and trailers as they came.
 */
import type { Attempt, AttemptRequest } from '../../cluster/attempt.js';

/**
 * True when a response with `status` is to be withheld for a retry: the policy would retry it
 * now and `limitBytes` (the cluster's `retryBufferBytes`) allows buffering. `retries.on` holds
 * 5xx statuses only, so anything below 500 is passed on without asking the policy.
 *
 * @example
 * if (withholds(attempt, 503, cluster.config.retryBufferBytes, request)) held = new WithheldResponse(head, limit);
 */
export function withholds(
  attempt: Attempt | undefined,
  status: number,
  limitBytes: number,
  request: AttemptRequest,
): boolean {
  return (
    status >= 500 && attempt !== undefined && limitBytes > 0 && attempt.wouldRetry({ type: 'status', status }, request)
  );
}

/**
 * A withheld response: its head (in the exchange's own form) and its body bytes so far, at most
 * `limitBytes` of them.
 *
 * @example
 * const held = new WithheldResponse(head, 65536);
 * if (!held.add(chunk)) release(held); // too big to retry: the client gets it as it is
 */
export class WithheldResponse<Head> {
  readonly head: Head;
  readonly parts: Buffer[] = [];
  #bytes = 0;
  readonly #limitBytes: number;

  constructor(head: Head, limitBytes: number) {
    this.head = head;
    this.#limitBytes = limitBytes;
  }

  /** Body bytes held so far. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Keeps `chunk`; false once the body is over the limit (release the response, do not retry it). */
  add(chunk: Buffer): boolean {
    this.parts.push(chunk);
    this.#bytes += chunk.length;
    return this.#bytes <= this.#limitBytes;
  }
}
