/**
 * The load exchange between pods: each pod answers `GET <loadPath>` with its current load, and
 * asks a few peers per period the same question. The document is small and versioned:
 *
 * ```json
 * {"protocol":"evenlb-load/1","metric":"requests-per-second","load":152.5,"windowMs":2000}
 * ```
 *
 * A peer answering anything else (another protocol, another metric, not JSON, an error status)
 * does not speak it: its answer is not used. Each peer is asked over one keep-alive connection
 * of its own, reused from period to period: a pod asks a few peers every period (the demo: 4
 * every 100 ms), and a fresh TCP connection per question costs both pods a handshake, an
 * accept and a close each time — through kube-proxy rules a conntrack entry too — which is most
 * of what the exchange costs. A peer that leaves the endpoint list has its connection closed
 * (`keepOnly`), so no socket outlives it. For HTTPS servers the exchange runs over TLS without
 * verifying the peer (the answer is a load figure; a forged one can only make a pod shed more or
 * less, never fail a request).
 */
import type http from 'node:http';
import { Client, request } from 'undici';
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

/** Asks peers for their load, with a timeout, one keep-alive connection per peer; one instance per shedder. */
export class LoadExchangeClient {
  /** One connection per peer origin (`http://host:port`), kept while the peer is listed. */
  readonly #clients = new Map<string, Client>();
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
  }

  /** The origin `ask(host, port)` talks to: the key `keepOnly` takes. */
  origin(host: string, port: number): string {
    return `${this.#tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  }

  /**
   * Closes the connections of every peer not in `origins` (from `origin()`): a peer that left
   * the endpoint list keeps no socket.
   *
   * @example
   * exchange.keepOnly(new Set(peers.map((e) => exchange.origin(e.address, loadPort))));
   */
  keepOnly(origins: ReadonlySet<string>): void {
    for (const [origin, client] of this.#clients) {
      if (origins.has(origin)) continue;
      this.#clients.delete(origin);
      void client.close().catch(() => undefined);
    }
  }

  #client(origin: string): Client {
    let client = this.#clients.get(origin);
    if (client === undefined || client.closed || client.destroyed) {
      client = new Client(origin, {
        connect: { rejectUnauthorized: false, timeout: this.#timeoutMs },
        pipelining: 1,
      });
      this.#clients.set(origin, client);
    }
    return client;
  }

  /** Asks `host:port`; never rejects. */
  async ask(host: string, port: number): Promise<PeerAnswer> {
    const controller = new AbortController();
    const timer = this.#clock.setTimeout(() => controller.abort(), this.#timeoutMs);
    const origin = this.origin(host, port);
    try {
      const res = await request(`${origin}${this.#path}`, {
        dispatcher: this.#client(origin),
        signal: controller.signal,
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

  /** Closes every peer's connection; idempotent. */
  async close(): Promise<void> {
    const clients = [...this.#clients.values()];
    this.#clients.clear();
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  }

  destroy(): void {
    const clients = [...this.#clients.values()];
    this.#clients.clear();
    for (const c of clients) void c.destroy().catch(() => undefined);
  }
}
