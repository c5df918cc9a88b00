/**
 * Load probes over HTTP, for a cluster whose policy reads probe answers (`prequal`): a probe asks
 * `GET http://<endpoint ip>:<port><path>` — the load document an evenlb server serves
 * (`reportLoad` in `evenlb/server`; see `load-document.ts`) — and hands the answer's requests in
 * flight and latency estimate to the endpoint's load record (`EndpointLoad.probed`). One prober
 * per cluster; any transport's cluster can use it (the agents, the proxy, the gRPC policy).
 *
 * `probe()` only queues (a picker calls it): probes are sent from a microtask, at most
 * `maxConcurrent` at once, and at most one per endpoint waits or runs at a time (a second ask
 * for the same endpoint is skipped — the pending answer serves both). Beyond `maxQueued`
 * waiting probes, or for an endpoint that is no longer eligible when its turn comes, the probe
 * is skipped: a removed endpoint is never asked. A probe without a well-formed answer within
 * `timeoutMs` (any status but 200, a body over `MAX_LOAD_DOCUMENT_BYTES`, a refused connection)
 * has failed and leaves the record as it was. Probes go over their own undici `Agent` (one
 * keep-alive connection per endpoint), never the request pools. Every fate is counted
 * (`stats()`) and reported (`onResult`: metrics).
 */
import { Agent, request } from 'undici';
import { MAX_LOAD_DOCUMENT_BYTES, parseProbeAnswer } from '../balancing/load-document.js';
import type { TrackedEndpoint } from '../balancing/picker.js';
import type { LoadProber } from '../balancing/policy.js';
import type { Clock } from '../core/clock.js';
import { Shutdown } from '../core/shutdown.js';
import type { ClusterTlsOptions, LoadProbeOptions, LoadProbeResult } from './cluster-options.js';

/** What a prober has done since it was made. */
export interface LoadProbeStats {
  /** Probes sent. */
  readonly sent: number;
  /** Probes answered with a load document (recorded in the load record). */
  readonly answered: number;
  /** Probes sent that got no usable answer. */
  readonly failed: number;
  /** Probes not sent: queue full, the same endpoint already being asked, or the endpoint no longer eligible. */
  readonly skipped: number;
  /** Probes in flight now. */
  readonly inFlight: number;
}

export interface HttpLoadProberInit {
  readonly options: LoadProbeOptions;
  readonly clock: Clock;
  /** True while `endpointKey` may be probed (it is eligible now). */
  readonly probeable: (endpointKey: string) => boolean;
  /** TLS settings for `tls: true` (the cluster's). */
  readonly tls?: ClusterTlsOptions | undefined;
  /** TLS server name when `tls.servername` is not set (the Service's host name). */
  readonly servername?: string | undefined;
  /** Told every probe's fate (stats, metrics). */
  readonly onResult?: (endpointKey: string, result: LoadProbeResult) => void;
}

export class HttpLoadProber implements LoadProber {
  readonly #init: HttpLoadProberInit;
  readonly #scheme: string;
  /** Probes waiting, by endpoint key, oldest first. */
  readonly #queue = new Map<string, TrackedEndpoint>();
  /** Probes in flight: endpoint key → abort. */
  readonly #running = new Map<string, AbortController>();
  #agent: Agent | undefined;
  #pumpQueued = false;
  #sent = 0;
  #answered = 0;
  #failed = 0;
  #skipped = 0;
  readonly #shutdown = new Shutdown();

  constructor(init: HttpLoadProberInit) {
    this.#init = init;
    this.#scheme = init.options.tls ? 'https' : 'http';
  }

  /** Queues a probe of `target`; sent from a microtask (see the module comment). */
  probe(target: TrackedEndpoint): void {
    if (this.#shutdown.closed) return;
    const key = target.endpoint.key;
    if (this.#queue.has(key) || this.#running.has(key) || this.#queue.size >= this.#init.options.maxQueued) {
      this.#result(key, 'skipped');
      return;
    }
    this.#queue.set(key, target);
    if (this.#pumpQueued) return;
    this.#pumpQueued = true;
    queueMicrotask(() => {
      this.#pumpQueued = false;
      this.#pump();
    });
  }

  stats(): LoadProbeStats {
    return {
      sent: this.#sent,
      answered: this.#answered,
      failed: this.#failed,
      skipped: this.#skipped,
      inFlight: this.#running.size,
    };
  }

  /** Stops probing: waiting probes are dropped, those in flight aborted, sockets closed. Idempotent; always settles. */
  close(): Promise<void> {
    return this.#shutdown.close(async () => {
      this.#stop();
      await this.#agent?.close();
    });
  }

  /** As `close()`, destroying the sockets at once. Idempotent. */
  destroy(): Promise<void> {
    return this.#shutdown.destroy(async () => {
      this.#stop();
      await this.#agent?.destroy();
    });
  }

  #stop(): void {
    this.#queue.clear();
    for (const abort of this.#running.values()) abort.abort();
  }

  #pump(): void {
    const { maxConcurrent } = this.#init.options;
    while (!this.#shutdown.closed && this.#running.size < maxConcurrent && this.#queue.size > 0) {
      const [key, target] = this.#queue.entries().next().value as [string, TrackedEndpoint];
      this.#queue.delete(key);
      if (!this.#init.probeable(key)) {
        this.#result(key, 'skipped');
        continue;
      }
      const abort = new AbortController();
      this.#running.set(key, abort);
      this.#result(key, 'sent');
      void this.#ask(target, abort).then((answered) => {
        this.#running.delete(key);
        this.#result(key, answered ? 'answered' : 'failed');
        this.#pump();
      });
    }
  }

  /** Sends one probe; true when its answer was recorded. Never rejects. */
  async #ask(target: TrackedEndpoint, abort: AbortController): Promise<boolean> {
    const { options, clock } = this.#init;
    const e = target.endpoint;
    const host = e.address.includes(':') ? `[${e.address}]` : e.address;
    const url = `${this.#scheme}://${host}:${options.port ?? e.port}${options.path}`;
    const timer = clock.setTimeout(() => abort.abort(), options.timeoutMs);
    try {
      const res = await request(url, {
        dispatcher: this.#dispatcher(),
        signal: abort.signal,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
        headers: { accept: 'application/json' },
      });
      const text = await readCapped(res.body, MAX_LOAD_DOCUMENT_BYTES);
      if (res.statusCode !== 200 || text === undefined || this.#shutdown.closed) return false;
      const answer = parseProbeAnswer(text);
      if (answer === undefined) return false;
      target.load.probed(answer.inFlight, answer.latencyMs ?? Number.NaN, clock.now());
      return true;
    } catch {
      return false;
    } finally {
      timer.cancel();
    }
  }

  #dispatcher(): Agent {
    if (this.#agent !== undefined) return this.#agent;
    const { options } = this.#init;
    const tls = this.#init.tls;
    const servername = tls?.servername ?? this.#init.servername;
    this.#agent = new Agent({
      connections: 1,
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 10_000,
      connect: {
        timeout: options.timeoutMs,
        ...(options.tls
          ? {
              rejectUnauthorized: tls?.rejectUnauthorized ?? true,
              ...(tls?.ca === undefined ? {} : { ca: tls.ca as string | Buffer | (string | Buffer)[] }),
              ...(tls?.cert === undefined ? {} : { cert: tls.cert as string | Buffer | (string | Buffer)[] }),
              ...(tls?.key === undefined ? {} : { key: tls.key as string | Buffer | (string | Buffer)[] }),
              ...(servername === undefined ? {} : { servername }),
            }
          : {}),
      },
    });
    return this.#agent;
  }

  #result(key: string, result: LoadProbeResult): void {
    if (result === 'sent') this.#sent++;
    else if (result === 'answered') this.#answered++;
    else if (result === 'failed') this.#failed++;
    else this.#skipped++;
    this.#init.onResult?.(key, result);
  }
}

/** The body as text when it is at most `maxBytes` long; undefined (and the body discarded) when longer. */
async function readCapped(
  body: AsyncIterable<Buffer> & { destroy(): unknown },
  maxBytes: number,
): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of body) {
    bytes += chunk.length;
    if (bytes > maxBytes) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
