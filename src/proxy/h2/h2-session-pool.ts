/**
 * HTTP/2 upstream sessions keyed by endpoint, for the proxy's `h2` clusters (gRPC): a transport
 * only (`EndpointTransport`). It does not pick, retry or keep load records — the cluster does,
 * through the attempt the caller holds (`clusterInternals(cluster).acquire()`): the caller asks
 * for a place on a session to `attempt.endpoint` (`connectionFor`), waits for `ready`, opens its
 * stream, and `release()`s the place when the stream ends.
 *
 * A session is reused while the shared `LifetimePolicy` lets it carry another stream (stream
 * count, jittered age, idle time) and the peer's `maxConcurrentStreams` has room; a retired
 * session (lifetime reached, GOAWAY received, endpoint drained) gets no new stream and closes
 * once its streams finish (`session.close()`, the graceful path). Sessions to endpoints that
 * leave the eligible set are retired the same way.
 */

import type { SecureClientSessionOptions } from 'node:http2';
import http2 from 'node:http2';
import type { EndpointTransport } from '../../cluster/attempt.js';
import { type Clock, systemClock } from '../../core/clock.js';
import type { Endpoint } from '../../core/endpoint.js';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import { Shutdown } from '../../core/shutdown.js';
import { departedEndpoints } from '../../pool/departed-endpoints.js';
import type { LifetimePolicy } from '../../pool/lifetime-policy.js';

export interface H2SessionPoolOptions {
  readonly lifetime: LifetimePolicy;
  readonly connectTimeoutMs: number;
  readonly tls?: { readonly ca?: string | Buffer; readonly servername?: string; readonly rejectUnauthorized: boolean };
  readonly clock?: Clock;
  /** Called when a session connects and when a connected session closes (the cluster's connection stats). */
  readonly onSessionChange?: (endpointKey: string, change: 'opened' | 'closed') => void;
  /**
   * Subscribes to the eligible endpoint keys after each discovery update (`Cluster.onEligibleChange`);
   * sessions to endpoints that left are drained. Returns an unsubscribe function.
   */
  readonly onEligibleChange?: (listener: (eligible: ReadonlySet<string>) => void) => () => void;
}

/**
 * One stream's place on a session to an endpoint (`H2SessionPool.connectionFor`). The session
 * may still be connecting: await `ready`, then open the stream on `session`; call `release()`
 * once the stream has ended, or when it is never opened.
 */
export interface H2SessionLease {
  readonly endpointKey: string;
  readonly session: http2.ClientHttp2Session;
  /**
   * True once the session is connected and still open; false when its connect failed
   * (refused, timed out, TLS) or it closed first — nothing was sent: a connect failure.
   */
  readonly ready: Promise<boolean>;
  /** Frees the place (the pool's stream counters, retired sessions close); idempotent. */
  release(): void;
}

interface PooledSession {
  readonly key: string;
  readonly session: http2.ClientHttp2Session;
  readonly openedAtMs: number;
  readonly maxAgeMs: number | undefined;
  requests: number;
  inFlight: number;
  idleSinceMs: number;
  connected: boolean;
  retired: boolean;
  /** Settles true on connect, false on a failed connect or a close before it. */
  readonly connecting: Promise<boolean>;
}

export class H2SessionPool implements EndpointTransport<H2SessionLease> {
  readonly #lifetime: LifetimePolicy;
  readonly #clock: Clock;
  readonly #options: H2SessionPoolOptions;
  readonly #sessions = new Map<string, PooledSession[]>();
  readonly #unsubscribe: () => void;
  #closed = false;
  readonly #shutdown = new Shutdown();
  /** Sessions opened, ever (for stats). */
  opened = 0;

  constructor(options: H2SessionPoolOptions) {
    this.#options = options;
    this.#lifetime = options.lifetime;
    this.#clock = options.clock ?? systemClock;
    this.#unsubscribe =
      options.onEligibleChange?.((eligible) => {
        for (const key of departedEndpoints([...this.#sessions.keys()], eligible)) this.drainEndpoint(key);
      }) ?? (() => {});
  }

  /** Connected sessions without a stream, per endpoint key (nothing queues: streams share sessions), for stats. */
  idleAndQueued(): Map<string, { idle: number; queued: number }> {
    const out = new Map<string, { idle: number; queued: number }>();
    for (const [key, list] of this.#sessions) {
      const idle = list.filter((s) => s.connected && s.inFlight === 0 && !s.session.closed).length;
      out.set(key, { idle, queued: 0 });
    }
    return out;
  }

  /**
   * A place for one stream on a session to `endpoint` with room (opened when there is none):
   * connected or connecting (`ready`). Throws `EVENLB_CLOSED` after `close()`/`destroy()`.
   */
  connectionFor(endpoint: Endpoint): H2SessionLease {
    if (this.#closed) throw new EvenlbError(ErrorCodes.CLOSED, 'h2 session pool is closed');
    const pooled = this.#sessionFor(endpoint);
    pooled.requests++;
    pooled.inFlight++;
    let released = false;
    const session = pooled.session;
    return {
      endpointKey: endpoint.key,
      session,
      ready: pooled.connected
        ? Promise.resolve(!session.closed && !session.destroyed)
        : pooled.connecting.then((ok) => ok && !session.closed && !session.destroyed),
      release: () => {
        if (released) return;
        released = true;
        pooled.inFlight--;
        if (pooled.inFlight > 0) return;
        pooled.idleSinceMs = this.#clock.now();
        if (pooled.retired) pooled.session.close();
      },
    };
  }

  #sessionFor(endpoint: Endpoint): PooledSession {
    const now = this.#clock.now();
    let list = this.#sessions.get(endpoint.key);
    if (list !== undefined) {
      for (const s of list) {
        if (s.retired || s.session.destroyed || s.session.closed) continue;
        const verdict = this.#lifetime.canCarryAnother(s, now);
        if (verdict.type === 'retire') {
          this.#retire(s);
          continue;
        }
        const max = s.session.remoteSettings?.maxConcurrentStreams ?? 100;
        if (s.inFlight < max) return s;
      }
    } else {
      list = [];
      this.#sessions.set(endpoint.key, list);
    }
    const s = this.#open(endpoint, now);
    list.push(s);
    return s;
  }

  #open(endpoint: Endpoint, now: number): PooledSession {
    const tls = this.#options.tls;
    const authority = `${tls === undefined ? 'http' : 'https'}://${endpoint.key}`;
    const sessionOptions: SecureClientSessionOptions = {
      ...(tls === undefined
        ? {}
        : {
            rejectUnauthorized: tls.rejectUnauthorized,
            ...(tls.ca === undefined ? {} : { ca: tls.ca }),
            ...(tls.servername === undefined ? {} : { servername: tls.servername }),
          }),
    };
    const session = http2.connect(authority, sessionOptions);
    this.opened++;
    let resolveReady!: (ok: boolean) => void;
    const connecting = new Promise<boolean>((r) => {
      resolveReady = r;
    });
    const pooled: PooledSession = {
      key: endpoint.key,
      session,
      openedAtMs: now,
      maxAgeMs: this.#lifetime.drawMaxAgeMs(),
      requests: 0,
      inFlight: 0,
      idleSinceMs: now,
      connected: false,
      retired: false,
      connecting,
    };
    const timer = this.#clock.setTimeout(() => {
      if (!pooled.connected) session.destroy(new EvenlbError(ErrorCodes.CONNECT_FAILED, 'connect timeout'));
    }, this.#options.connectTimeoutMs);
    session.once('connect', () => {
      timer.cancel();
      pooled.connected = true;
      this.#options.onSessionChange?.(endpoint.key, 'opened');
      resolveReady(true);
    });
    // Errors surface on the streams (and as a failed `ready`); the session just closes.
    session.on('error', () => {
      timer.cancel();
      resolveReady(false);
    });
    session.on('goaway', () => {
      pooled.retired = true;
    });
    session.once('close', () => {
      timer.cancel();
      resolveReady(false);
      if (pooled.connected) this.#options.onSessionChange?.(endpoint.key, 'closed');
      const list = this.#sessions.get(endpoint.key);
      if (list !== undefined) {
        const i = list.indexOf(pooled);
        if (i >= 0) list.splice(i, 1);
        if (list.length === 0) this.#sessions.delete(endpoint.key);
      }
    });
    const idle = this.#lifetime.options.idleTimeoutMs;
    if (idle !== undefined) {
      session.setTimeout(idle, () => {
        if (pooled.inFlight === 0) this.#retire(pooled);
      });
    }
    session.unref();
    return pooled;
  }

  #retire(s: PooledSession): void {
    if (s.retired) return;
    s.retired = true;
    if (s.inFlight === 0) s.session.close();
  }

  /** The endpoint's sessions take no new stream and close once their streams end. */
  drainEndpoint(endpointKey: string): void {
    for (const s of this.#sessions.get(endpointKey) ?? []) this.#retire(s);
  }

  /** Stops new streams; open sessions close once their streams end. Idempotent; `destroy()` settles it. */
  close(): Promise<void> {
    return this.#shutdown.close(async () => {
      this.#closed = true;
      this.#unsubscribe();
      const waits: Promise<void>[] = [];
      for (const list of this.#sessions.values()) {
        for (const s of list) {
          waits.push(new Promise<void>((r) => (s.session.closed ? r() : s.session.close(() => r()))));
        }
      }
      await Promise.all(waits);
    });
  }

  /** Destroys every session at once (their streams fail with `err`); settles a pending `close()`. Idempotent. */
  destroy(err?: Error): Promise<void> {
    return this.#shutdown.destroy(async () => {
      this.#closed = true;
      this.#unsubscribe();
      for (const list of this.#sessions.values()) for (const s of list) s.session.destroy(err);
      this.#sessions.clear();
    });
  }
}
