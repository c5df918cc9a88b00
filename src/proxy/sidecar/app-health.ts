/**
 * Readiness of the application behind a server-side sidecar: the sidecar is ready only while
 * the app answers. An active check runs every `intervalMs` against the app's local address —
 * `tcp` (a connection is accepted) or `http` (a GET of `path` answers 1xx–3xx, spoken in the
 * app's own protocol: HTTP/1.1 or HTTP/2, over TLS when the app serves TLS) — each with a
 * deadline of `timeoutMs`. The app is ready after one passing check and not ready after
 * `failureThreshold` failing ones in a row, so a sidecar never reports ready for an app that
 * has not answered yet. `notReady()` is what `/readyz` reports (undefined when ready).
 *
 * Checks never overlap (the next one is scheduled when the last has settled); every socket
 * a check opens is closed when it settles. `close()` stops the schedule and waits for a check
 * in flight (bounded by its deadline); `destroy()` also cuts it. Both are idempotent.
 */
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import net from 'node:net';
import type tls from 'node:tls';
import type { Clock, TimerHandle } from '../../core/clock.js';
import { opt, type Parsed } from '../../core/options.js';
import { Shutdown } from '../../core/shutdown.js';

const isPath = (v: unknown): v is string => typeof v === 'string' && v.startsWith('/') && !/[\s]/.test(v);

/** The app check's options (`sidecar.appCheck`, `--app-check*` flags). */
export const appCheckSpec = {
  /** `tcp`: the app accepts a connection; `http`: a GET of `path` answers with a status below 400. */
  kind: opt.oneOf(['tcp', 'http'] as const, { default: 'tcp' }),
  /** The path an `http` check asks for. */
  path: opt.custom('a path starting with "/" (no spaces)', isPath, { default: '/' }),
  /** Time between the end of one check and the start of the next, ms. */
  intervalMs: opt.number({ min: 10, default: 2000 }),
  /** Deadline of one check (connect, TLS, response head), ms. */
  timeoutMs: opt.number({ min: 1, default: 1000 }),
  /** Failing checks in a row that make the app not ready (one passing check makes it ready). */
  failureThreshold: opt.int({ min: 1, max: 100, default: 1 }),
};

export type AppCheckSettings = Parsed<typeof appCheckSpec>;

/** Where the app listens and how it speaks. */
export interface AppEndpoint {
  readonly host: string;
  readonly port: number;
  readonly protocol: 'http1' | 'h2';
  /** Set when the app serves TLS: how its certificate is checked. */
  readonly tls?: {
    readonly servername?: string | undefined;
    readonly ca?: string | Buffer | undefined;
    readonly rejectUnauthorized: boolean;
  };
}

export type AppCheckResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/**
 * The app's address as people read it: `127.0.0.1:8081` (IPv6 in brackets).
 *
 * @example
 * appAddress({ host: '::1', port: 8081, protocol: 'http1' }); // '[::1]:8081'
 */
export function appAddress(app: AppEndpoint): string {
  return `${app.host.includes(':') ? `[${app.host}]` : app.host}:${app.port}`;
}

function errorReason(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : err instanceof Error ? err.message : String(err);
}

function tlsOptions(app: AppEndpoint): tls.ConnectionOptions {
  const t = app.tls;
  if (t === undefined) return {};
  return {
    rejectUnauthorized: t.rejectUnauthorized,
    ...(t.ca === undefined ? {} : { ca: t.ca }),
    ...(t.servername === undefined || net.isIP(t.servername) !== 0 ? {} : { servername: t.servername }),
  };
}

/**
 * Runs one check of `app`; never rejects. Whatever it opened is closed when it settles.
 *
 * @example
 * await checkApp({ host: '127.0.0.1', port: 8081, protocol: 'http1' }, parseOptions('c', { kind: 'http', path: '/healthz' }, appCheckSpec), systemClock)
 * // { ok: true } or { ok: false, reason: 'ECONNREFUSED' }
 */
export function checkApp(app: AppEndpoint, settings: AppCheckSettings, clock: Clock): Promise<AppCheckResult> {
  return new Promise((resolve) => {
    const cleanups: (() => void)[] = [];
    let settled = false;
    const finish = (result: AppCheckResult): void => {
      if (settled) return;
      settled = true;
      timer.cancel();
      for (const c of cleanups) c();
      resolve(result);
    };
    const timer: TimerHandle = clock.setTimeout(
      () => finish({ ok: false, reason: `no answer within ${settings.timeoutMs} ms` }),
      settings.timeoutMs,
    );
    const fail = (err: unknown): void => finish({ ok: false, reason: errorReason(err) });
    const status = (code: number): void =>
      finish(code < 400 ? { ok: true } : { ok: false, reason: `GET ${settings.path} answered ${code}` });
    try {
      if (settings.kind === 'tcp') {
        const socket = net.connect({ host: app.host, port: app.port });
        cleanups.push(() => socket.destroy());
        socket.once('connect', () => finish({ ok: true }));
        socket.once('error', fail);
        return;
      }
      const authority = appAddress(app);
      if (app.protocol === 'h2') {
        const scheme = app.tls === undefined ? 'http' : 'https';
        const session = http2.connect(`${scheme}://${authority}`, tlsOptions(app));
        cleanups.push(() => session.destroy());
        session.on('error', fail);
        const stream = session.request({ ':method': 'GET', ':path': settings.path });
        stream.on('error', fail);
        stream.once('response', (headers) => status(Number(headers[':status'])));
        stream.end();
        return;
      }
      const options: https.RequestOptions = {
        host: app.host,
        port: app.port,
        path: settings.path,
        method: 'GET',
        agent: false,
        headers: { host: authority, 'user-agent': 'evenlb-sidecar-app-check' },
        ...tlsOptions(app),
      };
      const req = app.tls === undefined ? http.request(options) : https.request(options);
      cleanups.push(() => req.destroy());
      req.once('response', (res) => {
        res.resume();
        status(res.statusCode ?? 0);
      });
      req.once('error', fail);
      req.end();
    } catch (err) {
      fail(err);
    }
  });
}

/** What the app check has seen. */
export interface AppHealthState {
  readonly ready: boolean;
  /** Why not ready; undefined when ready. */
  readonly reason: string | undefined;
  readonly checks: number;
  readonly failuresInARow: number;
}

/**
 * Checks an app periodically and says whether it answers.
 *
 * @example
 * const health = new AppHealth({ host: '127.0.0.1', port: 8081, protocol: 'http1' }, settings, systemClock);
 * health.start();
 * health.notReady(); // 'app 127.0.0.1:8081: first check pending', then undefined once it answers
 * await health.close();
 */
export class AppHealth {
  readonly #app: AppEndpoint;
  readonly #settings: AppCheckSettings;
  readonly #clock: Clock;
  readonly #onChange: ((state: AppHealthState) => void) | undefined;
  readonly #shutdown = new Shutdown();
  #timer: TimerHandle | undefined;
  #running: Promise<void> | undefined;
  #state: AppHealthState;

  constructor(app: AppEndpoint, settings: AppCheckSettings, clock: Clock, onChange?: (state: AppHealthState) => void) {
    this.#app = app;
    this.#settings = settings;
    this.#clock = clock;
    this.#onChange = onChange;
    this.#state = { ready: false, reason: `${this.#name()}: first check pending`, checks: 0, failuresInARow: 0 };
  }

  /** Runs the first check now and the next ones every `intervalMs`; idempotent. */
  start(): void {
    if (this.#shutdown.closed || this.#timer !== undefined || this.#running !== undefined) return;
    this.#run();
  }

  get state(): AppHealthState {
    return this.#state;
  }

  /** Undefined while the app answers; otherwise why the sidecar is not ready. */
  notReady(): string | undefined {
    return this.#state.ready ? undefined : this.#state.reason;
  }

  #name(): string {
    const check = this.#settings.kind === 'tcp' ? 'tcp check' : `GET ${this.#settings.path}`;
    return `app ${appAddress(this.#app)} (${check})`;
  }

  #run(): void {
    this.#timer = undefined;
    this.#running = checkApp(this.#app, this.#settings, this.#clock).then((result) => {
      this.#running = undefined;
      if (this.#shutdown.closed) return;
      this.#record(result);
      this.#timer = this.#clock.setTimeout(() => this.#run(), this.#settings.intervalMs);
    });
  }

  #record(result: AppCheckResult): void {
    const before = this.#state;
    const checks = before.checks + 1;
    if (result.ok) this.#state = { ready: true, reason: undefined, checks, failuresInARow: 0 };
    else {
      const failuresInARow = before.failuresInARow + 1;
      const ready = before.ready && failuresInARow < this.#settings.failureThreshold;
      const reason = ready ? undefined : `${this.#name()}: not answering (${result.reason})`;
      this.#state = { ready, reason, checks, failuresInARow };
    }
    if (before.ready !== this.#state.ready || (before.checks === 0 && this.#state.checks === 1))
      this.#onChange?.(this.#state);
  }

  /** Stops checking; waits for a check in flight (at most its deadline). Always settles; idempotent. */
  close(): Promise<void> {
    return this.#shutdown.close(async () => {
      this.#timer?.cancel();
      await this.#running;
    });
  }

  /** Stops checking at once (a check in flight settles by its own deadline, unobserved). Idempotent. */
  destroy(): Promise<void> {
    return this.#shutdown.destroy(async () => {
      this.#timer?.cancel();
    });
  }
}
