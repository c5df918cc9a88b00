/**
 * HTTP/2 upstream sessions keyed by endpoint, for the proxy's `h2` clusters (gRPC). Each
 * request asks the cluster's `Balancer` picker for an endpoint, so streams are balanced one by
 * one even though they share a handful of sessions. A session is reused while the shared
 * `LifetimePolicy` lets it carry another stream (stream count, jittered age, idle time) and the
 * peer's `maxConcurrentStreams` has room; a retired session gets no new stream and closes once
 * its streams finish (`session.close()`, the graceful path). Sessions to endpoints that leave the
 * eligible set are retired the same way. A session that fails to connect sends the request to
 * another endpoint (connect failures never reached a server).
 */

import type { SecureClientSessionOptions } from 'node:http2';
import http2 from 'node:http2';
import type { Balancer } from '../balancing/balancer.js';
import type { EndpointLoad } from '../balancing/endpoint-load.js';
import type { PickContext } from '../balancing/picker.js';
import type { EndpointTransport } from '../cluster/attempt.js';
import { type Clock, systemClock } from '../core/clock.js';
import type { Endpoint } from '../core/endpoint.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { Shutdown } from '../core/shutdown.js';
import { departedEndpoints, eligibleKeys } from './departed-endpoints.js';
import type { LifetimePolicy } from './lifetime-policy.js';

export interface H2SessionPoolOptions {
  readonly balancer: Balancer;
  readonly lifetime: LifetimePolicy;
  readonly connectTimeoutMs: number;
  /** Extra endpoints to try after a connect failure. */
  readonly connectRetries: number;
  readonly tls?: { readonly ca?: string | Buffer; readonly servername?: string; readonly rejectUnauthorized: boolean };
  readonly clock?: Clock;
  /** Called once per finished stream with its endpoint, outcome and duration (outlier detection, metrics). */
  readonly onStreamEnd?: (endpointKey: string, ok: boolean, durationMs: number) => void;
  /**
   * Called once per failed session connect, with how long the attempt took and whether the
   * stream goes on to another endpoint (a retry). Without it, `onStreamEnd(key, false, ms)`.
   */
  readonly onConnectFailure?: (endpointKey: string, durationMs: number, retried: boolean) => void;
  /** Called when a session connects and when a connected session closes (the cluster's connection stats). */
  readonly onSessionChange?: (endpointKey: string, change: 'opened' | 'closed') => void;
}

/** One stream acquired from the pool: send the request on `session`, then call `done(ok)` once. */
export interface H2Lease {
  readonly endpoint: Endpoint;
  readonly load: EndpointLoad;
  readonly session: http2.ClientHttp2Session;
  /** Records the stream's end (load, lifetime counters); idempotent. */
  done(ok: boolean): void;
}

export type H2Acquire =
  | { readonly type: 'lease'; readonly lease: H2Lease }
  | { readonly type: 'none'; readonly reason: string; readonly error: EvenlbError };

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
  readonly ready: Promise<boolean>;
}

export class H2SessionPool implements EndpointTransport<http2.ClientHttp2Session> {
  readonly #balancer: Balancer;
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
    this.#balancer = options.balancer;
    this.#lifetime = options.lifetime;
    this.#clock = options.clock ?? systemClock;
    this.#unsubscribe = this.#balancer.onPicker(() => this.#reconcile());
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
   * Picks an endpoint and returns a connected session for one stream. Connect failures move on
   * to another endpoint, up to `connectRetries` times.
   */
  async acquire(context: PickContext = {}): Promise<H2Acquire> {
    let retries = this.#options.connectRetries;
    let lastError: Error | undefined;
    // Our own copy: excluding a failed endpoint must not leak into the caller's context.
    const ctx: PickContext = { ...context };
    for (;;) {
      if (this.#closed) {
        const error = new EvenlbError(ErrorCodes.CLOSED, 'h2 session pool is closed');
        return { type: 'none', reason: 'closed', error };
      }
      const picked = this.#balancer.picker.pick(ctx);
      if (picked.type === 'none') {
        const error = new EvenlbError(ErrorCodes.NO_ENDPOINTS, `no endpoint can take the stream (${picked.reason})`, {
          details: { reason: picked.reason },
          ...(lastError === undefined ? {} : { cause: lastError }),
        });
        return { type: 'none', reason: picked.reason, error };
      }
      const pooled = this.#sessionFor(picked.endpoint);
      // The attempt counts as load from the pick, while it connects, as a request would.
      const startMs = picked.load.start();
      const ok = pooled.connected || (await pooled.ready);
      if (ok && !pooled.session.destroyed && !pooled.session.closed) {
        return { type: 'lease', lease: this.#lease(pooled, picked.endpoint, picked.load, startMs) };
      }
      // One failed attempt: ended once in the load record, reported once.
      picked.load.end(startMs, false);
      const retried = retries > 0;
      const durationMs = this.#clock.now() - startMs;
      if (this.#options.onConnectFailure !== undefined) {
        this.#options.onConnectFailure(picked.endpoint.key, durationMs, retried);
      } else {
        this.#options.onStreamEnd?.(picked.endpoint.key, false, durationMs);
      }
      lastError = new EvenlbError(ErrorCodes.CONNECT_FAILED, `connect to ${picked.endpoint.key} failed`);
      if (!retried) return { type: 'none', reason: 'connect-failed', error: lastError as EvenlbError };
      retries--;
      ctx.exclude = picked.endpoint.key;
    }
  }

  #lease(pooled: PooledSession, endpoint: Endpoint, load: EndpointLoad, startMs: number): H2Lease {
    pooled.requests++;
    pooled.inFlight++;
    let ended = false;
    return {
      endpoint,
      load,
      session: pooled.session,
      done: (ok: boolean) => {
        if (ended) return;
        ended = true;
        load.end(startMs, ok);
        this.#options.onStreamEnd?.(endpoint.key, ok, this.#clock.now() - startMs);
        pooled.inFlight--;
        if (pooled.inFlight === 0) pooled.idleSinceMs = this.#clock.now();
        if (pooled.retired && pooled.inFlight === 0) pooled.session.close();
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
    const ready = new Promise<boolean>((r) => {
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
      ready,
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

  /** Drains sessions to endpoints that departed (see `departedEndpoints`); their open streams finish. */
  #reconcile(): void {
    const eligible = eligibleKeys(this.#balancer.endpointSet);
    for (const key of departedEndpoints(this.#sessions.keys(), eligible)) this.drainEndpoint(key);
  }

  /** The endpoint's sessions take no new stream and close once their streams end. */
  drainEndpoint(endpointKey: string): void {
    for (const s of this.#sessions.get(endpointKey) ?? []) this.#retire(s);
  }

  /** A session to `endpoint` with room for a stream (opened when there is none); connected or connecting. */
  connectionFor(endpoint: Endpoint): http2.ClientHttp2Session {
    return this.#sessionFor(endpoint).session;
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
