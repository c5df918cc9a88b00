/**
 * The cluster's deadlines for one stream to an `h2` upstream, as the HTTP/1.1 exchange has them:
 * the response head within `requestTimeoutMs` of the stream being sent, then DATA at least
 * every `bodyTimeoutMs` (0 = none for either). One timer per stream on the cluster's clock,
 * re-armed once per period (a read only bumps a counter). When one expires the upstream stream
 * is cancelled (RST_STREAM CANCEL) and the caller's handler answers the client.
 */
import http2 from 'node:http2';
import type { TimerHandle } from '../../core/clock.js';
import type { ProxyCluster } from '../upstream/proxy-cluster.js';

export interface H2DeadlineHandlers {
  /** No response head in time: answer 504 (the upstream stream is cancelled after). */
  head(): void;
  /** The body stalled after the head: cut the client's stream or connection. */
  body(): void;
}

export class H2Deadlines {
  readonly #cluster: ProxyCluster;
  readonly #up: http2.ClientHttp2Stream;
  readonly #on: H2DeadlineHandlers;
  #timer: TimerHandle | undefined;
  #reads = 0;
  #stopped = false;

  constructor(cluster: ProxyCluster, up: http2.ClientHttp2Stream, on: H2DeadlineHandlers) {
    this.#cluster = cluster;
    this.#up = up;
    this.#on = on;
    const ms = cluster.config.requestTimeoutMs;
    if (ms > 0) this.#timer = cluster.clock.setTimeout(() => this.#expired(on.head), ms);
  }

  /** The response head arrived: the body deadline starts. */
  responded(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    const ms = this.#cluster.config.bodyTimeoutMs;
    if (ms <= 0 || this.#stopped) return;
    let seen = this.#reads;
    const check = (): void => {
      if (this.#stopped) return;
      if (this.#reads === seen) {
        this.#expired(this.#on.body);
        return;
      }
      seen = this.#reads;
      this.#timer = this.#cluster.clock.setTimeout(check, ms);
    };
    this.#timer = this.#cluster.clock.setTimeout(check, ms);
  }

  /** A DATA frame arrived. */
  read(): void {
    this.#reads++;
  }

  #expired(handler: () => void): void {
    if (this.#stopped) return;
    this.#stopped = true;
    handler();
    if (!this.#up.closed) this.#up.close(http2.constants.NGHTTP2_CANCEL);
  }

  /** The stream ended: no deadline fires any more. */
  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }
}
