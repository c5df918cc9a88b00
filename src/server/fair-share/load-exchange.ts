/**
 * The load exchange between pods: each pod answers `GET <loadPath>` with its current load, and
 * asks a few peers per period the same question. The document is small and versioned:
 *
 * ```json
 * {"protocol":"evenlb-load/1","metric":"requests-per-second","load":152.5,"windowMs":2000}
 * ```
 *
 * A peer answering anything else (another protocol, another metric, not JSON, an error status)
 * does not speak it: its answer is not used. Requests carry `Connection: close`-style reset so
 * no pooled socket outlives a peer that left. For HTTPS servers the exchange runs over TLS
 * without verifying the peer (the answer is a load figure; a forged one can only make a pod
 * shed more or less, never fail a request).
 */
import type http from 'node:http';
import { Agent, request } from 'undici';
import type { FairShareLoadMetric } from '../../balancing/fair-share/fair-share-options.js';
import { LOAD_PROTOCOL } from '../../balancing/load-document.js';
import type { Clock } from '../../core/clock.js';

export { LOAD_PROTOCOL };

/**
 * What a pod reports to its peers on the load exchange (not an ORCA `LoadReport`); a pod that
 * also reports its load adds the probe fields (`inFlight`, `latencyMs`; see `load-document.ts`).
 */
export interface PeerLoadReport {
  readonly protocol: typeof LOAD_PROTOCOL;
  readonly metric: FairShareLoadMetric;
  readonly load: number;
  readonly windowMs: number;
  /** Requests in flight at the pod now (when it reports its load). */
  readonly inFlight?: number;
  /** The pod's latency estimate at that in-flight count, ms (when it reports its load). */
  readonly latencyMs?: number;
}

/** Writes `report` as the answer to a load request. */
export function answerLoadRequest(res: http.ServerResponse, report: PeerLoadReport): void {
  const body = JSON.stringify(report);
  res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}

/** True when `url` (a request's path and query) asks for the load document at `loadPath`. */
export function isLoadRequest(method: string | undefined, url: string | undefined, loadPath: string): boolean {
  if (method !== 'GET' || url === undefined) return false;
  const q = url.indexOf('?');
  return (q < 0 ? url : url.slice(0, q)) === loadPath;
}

export type PeerAnswer = { readonly ok: true; readonly load: number } | { readonly ok: false; readonly error: string };

/** Asks peers for their load, with a timeout; one instance per shedder. */
export class LoadExchangeClient {
  readonly #agent: Agent;
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  readonly #metric: FairShareLoadMetric;
  readonly #path: string;
  readonly #tls: boolean;

  constructor(init: {
    readonly clock: Clock;
    readonly timeoutMs: number;
    readonly metric: FairShareLoadMetric;
    readonly path: string;
    readonly tls: boolean;
  }) {
    this.#clock = init.clock;
    this.#timeoutMs = init.timeoutMs;
    this.#metric = init.metric;
    this.#path = init.path;
    this.#tls = init.tls;
    this.#agent = new Agent({ connect: { rejectUnauthorized: false, timeout: init.timeoutMs } });
  }

  /** Asks `host:port`; never rejects. */
  async ask(host: string, port: number): Promise<PeerAnswer> {
    const controller = new AbortController();
    const timer = this.#clock.setTimeout(() => controller.abort(), this.#timeoutMs);
    const h = host.includes(':') ? `[${host}]` : host;
    try {
      const res = await request(`${this.#tls ? 'https' : 'http'}://${h}:${port}${this.#path}`, {
        dispatcher: this.#agent,
        signal: controller.signal,
        reset: true,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
      });
      const text = await res.body.text();
      if (res.statusCode !== 200) return { ok: false, error: `HTTP ${res.statusCode}` };
      let doc: unknown;
      try {
        doc = JSON.parse(text);
      } catch {
        return { ok: false, error: 'answer is not JSON (the peer does not speak the load exchange)' };
      }
      const d = doc as Partial<PeerLoadReport>;
      if (d.protocol !== LOAD_PROTOCOL || typeof d.load !== 'number' || !Number.isFinite(d.load) || d.load < 0) {
        return { ok: false, error: `answer is not an ${LOAD_PROTOCOL} document` };
      }
      if (d.metric !== this.#metric)
        return { ok: false, error: `peer measures ${String(d.metric)}, not ${this.#metric}` };
      return { ok: true, load: d.load };
    } catch (err) {
      if (controller.signal.aborted) return { ok: false, error: `no answer within ${this.#timeoutMs} ms` };
      const code = (err as { code?: unknown }).code;
      return { ok: false, error: typeof code === 'string' ? code : err instanceof Error ? err.message : String(err) };
    } finally {
      timer.cancel();
    }
  }

  /** Closes pooled sockets; idempotent. */
  async close(): Promise<void> {
    await this.#agent.close().catch(() => undefined);
  }

  destroy(): void {
    void this.#agent.destroy().catch(() => undefined);
  }
}
