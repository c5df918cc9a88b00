/**
 * List+watch of one Kubernetes collection (client-go's reflector, written for evenlb's failure
 * rules). It LISTs once, then WATCHes from the list's resourceVersion with bookmarks, keeping
 * an in-memory copy of the selected objects:
 *
 * - the LIST is paged (`limit`, following `metadata.continue` until it is empty); the copy is
 *   replaced only after the last page, and the watch starts from the last page's
 *   resourceVersion. A continue token that expired (`410`) restarts the list from the
 *   beginning as one unpaged request, as client-go's pager does;
 * - every watch asks the server to end it after a random 1–2× `watchTimeoutSeconds` (as
 *   client-go does, so reconnects spread out and no watch lives forever); a stream the server
 *   ends cleanly is resumed from the last resourceVersion seen (events and bookmarks advance
 *   it), without a new LIST. A server that ignores the timeout has the stream ended for it a
 *   minute later, and resumed the same way;
 * - `410` (an `ERROR` event or the HTTP status, reason `Expired`/`Gone`) means the
 *   resourceVersion was compacted away: LIST again and replace the copy in one step;
 * - a watch silent (no event, no bookmark) for `watchIdleTimeoutMs` is torn down and restarted
 *   (kube-apiserver sends a bookmark about once a minute to watches that ask for them, so a
 *   silence much longer than that is a black-holed connection);
 * - a broken stream is re-opened at once; after that, and on every failed request, the
 *   reflector waits with jittered exponential backoff and reports the failure.
 *
 * The copy is never cleared by a failure: consumers keep the last known objects. `onChange`
 * fires after each LIST, after each batch of events that changed something, and when the
 * failure state changes; consumers read `items`, `synced` and `failure` synchronously in it.
 */
import type { Clock, TimerHandle } from '../../core/clock.js';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import type { Random } from '../../core/random.js';
import { Backoff } from './backoff.js';
import type { ApiResult, KubeApiClient, Query } from './kube-api-client.js';
import { describeConnection } from './kube-connection.js';
import { isExpiredStatus, isRecord, objectName, resourceVersionOf } from './kube-objects.js';
import { type AbortReason, RequestAttempt as Attempt } from './request-attempt.js';

/** Timing of list+watch; every value is configurable so tests can run fast. */
export interface WatchTiming {
  /** First reconnect delay after a failure (ms); doubles per failure, jittered to [50%, 100%). */
  readonly backoffBaseMs: number;
  /** Upper bound of the reconnect delay (ms). */
  readonly backoffMaxMs: number;
  /** A watch that delivers nothing (no event, no bookmark) for this long is restarted (ms). */
  readonly watchIdleTimeoutMs: number;
  /**
   * Asks the server to end each watch after a random 1–2× this many seconds (then it is
   * resumed); the reflector ends it itself a minute after that.
   */
  readonly watchTimeoutSeconds: number;
  /** Deadline for a LIST, and for a watch's response headers (ms). */
  readonly requestTimeoutMs: number;
}

export interface ReflectorOptions<T> {
  readonly client: KubeApiClient;
  /** Collection path, e.g. `/apis/discovery.k8s.io/v1/namespaces/NS/endpointslices`. */
  readonly path: string;
  /** Selector query (`labelSelector`, `fieldSelector`). */
  readonly query: Query;
  /** What is followed, for messages (`EndpointSlices of policy/webhook`). */
  readonly description: string;
  /** Keeps only objects of the expected shape; others are ignored. */
  readonly accept: (object: unknown) => object is T;
  readonly clock: Clock;
  readonly random: Random;
  readonly timing: WatchTiming;
  /** Objects per LIST page (`limit`); default 500. */
  readonly listPageSize?: number | undefined;
  readonly onChange: () => void;
}

/** The default number of objects per LIST page (client-go's reflector uses 500 too). */
export const DEFAULT_LIST_PAGE_SIZE = 500;

/** Counters, for diagnostics and tests. */
export interface ReflectorStats {
  /** Successful LISTs (the first one and every re-list), each counted once however many pages. */
  lists: number;
  /** LIST pages received (one per LIST request answered with a page). */
  listPages: number;
  /** Paged LISTs restarted because a continue token expired. */
  continueExpired: number;
  /** Re-lists caused by 410 Expired/Gone. */
  expired: number;
  /** Watch streams opened. */
  watches: number;
  /** Watches restarted for silence. */
  idleRestarts: number;
  /** Watches the server kept open past their `timeoutSeconds`, ended and resumed by the reflector. */
  lifetimeRestarts: number;
  /** Failed requests and broken streams. */
  failures: number;
}

/** How long past its requested `timeoutSeconds` a watch may stay open before it is ended here. */
const WATCH_LIFETIME_GRACE_MS = 60_000;

/** The watch ended because the resourceVersion expired. */
const EXPIRED = Symbol('expired');

export class ResourceReflector<T> {
  readonly #o: ReflectorOptions<T>;
  readonly #backoff: Backoff;
  readonly #items = new Map<string, T>();
  readonly stats: ReflectorStats = {
    lists: 0,
    listPages: 0,
    continueExpired: 0,
    expired: 0,
    watches: 0,
    idleRestarts: 0,
    lifetimeRestarts: 0,
    failures: 0,
  };
  #resourceVersion: string | undefined;
  #synced = false;
  #failure: EvenlbError | undefined;
  #closed = false;
  #started = false;
  #attempt: Attempt | undefined;
  #sleep: { timer: TimerHandle; resolve: () => void } | undefined;
  /** A broken stream is re-opened once without waiting; cleared by any received line. */
  #immediateRetryUsed = false;
  /** 410s in a row without an event in between: a server that expires every fresh version. */
  #expiredStreak = 0;

  constructor(options: ReflectorOptions<T>) {
    this.#o = options;
    this.#backoff = new Backoff(options.timing.backoffBaseMs, options.timing.backoffMaxMs, options.random);
  }

  /** The objects last seen, by name. Live: read it synchronously (in `onChange`). */
  get items(): ReadonlyMap<string, T> {
    return this.#items;
  }

  /** True once a LIST has succeeded. */
  get synced(): boolean {
    return this.#synced;
  }

  /** The current failure, cleared by the next successful LIST or watch. */
  get failure(): EvenlbError | undefined {
    return this.#failure;
  }

  get resourceVersion(): string | undefined {
    return this.#resourceVersion;
  }

  /** Starts listing and watching; idempotent. */
  start(): void {
    if (this.#started || this.#closed) return;
    this.#started = true;
    this.#run().catch((err: unknown) => {
      // Only a bug can get here (every request error is handled in the loop): surface it.
      queueMicrotask(() => {
        throw err;
      });
    });
  }

  /** Stops: aborts the open request and any pending retry. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#attempt?.abort('closed');
    if (this.#sleep !== undefined) {
      this.#sleep.timer.cancel();
      this.#sleep.resolve();
    }
  }

  async #run(): Promise<void> {
    const { client, path, query, timing, clock } = this.#o;
    let needList = true;
    while (!this.#closed) {
      try {
        await client.connection.load();
      } catch (err) {
        if (this.#closed) return;
        await this.#fail(this.#networkError(err, undefined));
        continue;
      }
      if (this.#closed) return;
      let attempt = new Attempt(clock, timing.requestTimeoutMs);
      this.#attempt = attempt;
      let watching = false;
      try {
        if (needList) {
          // Pages of one LIST; each request gets a fresh attempt (and deadline).
          const pageSize = this.#o.listPageSize ?? DEFAULT_LIST_PAGE_SIZE;
          const items: unknown[] = [];
          let listRv: string | undefined;
          let token: string | undefined;
          let paged = true;
          let failed = false;
          for (;;) {
            const listed = await client.get(
              path,
              paged ? { ...query, limit: String(pageSize), continue: token } : query,
              attempt.signal,
            );
            attempt.dispose();
            if (this.#closed) return;
            if (listed.type === 'status') {
              if (token !== undefined && (listed.statusCode === 410 || isExpiredStatus(listed.status))) {
                // The snapshot behind the token was compacted: start over with one full LIST.
                this.stats.continueExpired++;
                items.length = 0;
                token = undefined;
                paged = false;
                attempt = this.#nextAttempt();
                continue;
              }
              await this.#fail(this.#statusError('list', listed), listed.retryAfterMs);
              failed = true;
              break;
            }
            const page = this.#listPage(listed.value);
            this.stats.listPages++;
            for (const item of page.items) items.push(item);
            listRv = page.resourceVersion;
            token = page.continueToken;
            if (!paged || token === undefined) break;
            attempt = this.#nextAttempt();
          }
          if (failed) continue;
          this.#applyList(items, listRv!);
          needList = false;
          // After a 410 the schedule resets only once the new watch delivers something.
          if (this.#expiredStreak === 0) this.#backoff.reset();
          this.#immediateRetryUsed = false;
          this.#failure = undefined;
          this.#o.onChange();
          continue; // A fresh attempt (and deadline) for the watch.
        }
        // client-go's spread: [1, 2) × the base, so watches opened together end apart.
        const timeoutSeconds = Math.floor(timing.watchTimeoutSeconds * (1 + this.#o.random.next()));
        const opened = await client.watch(
          path,
          {
            ...query,
            resourceVersion: this.#resourceVersion,
            allowWatchBookmarks: 'true',
            timeoutSeconds: String(timeoutSeconds),
          },
          attempt.signal,
        );
        if (this.#closed) return;
        if (opened.type === 'status') {
          attempt.dispose();
          if (opened.statusCode === 410 || isExpiredStatus(opened.status)) {
            await this.#expired();
            needList = true;
            continue;
          }
          await this.#fail(this.#statusError('watch', opened), opened.retryAfterMs);
          continue;
        }
        this.stats.watches++;
        watching = true;
        attempt.watchIdle(timing.watchIdleTimeoutMs, timeoutSeconds * 1000 + WATCH_LIFETIME_GRACE_MS);
        if (this.#failure !== undefined) {
          this.#failure = undefined;
          this.#o.onChange();
        }
        const openedAtMs = clock.now();
        const outcome = await this.#consume(opened.value, attempt);
        if (this.#closed) return;
        if (outcome === EXPIRED) {
          await this.#expired();
          needList = true;
        } else if (outcome === 'silent' && clock.now() - openedAtMs < (timeoutSeconds * 1000) / 2) {
          // Ended cleanly but early and without a line: a server or proxy that ends watches at
          // once would make resuming a busy loop, so wait (without reporting a failure).
          await this.#pause(this.#backoff.next());
        }
        // Otherwise the server ended the watch (its timeoutSeconds): resume from the last
        // resourceVersion at once.
      } catch (err) {
        attempt.dispose();
        if (this.#closed) return;
        if (attempt.reason === 'idle') {
          this.stats.idleRestarts++;
          continue;
        }
        if (attempt.reason === 'lifetime') {
          // Not a failure: resume from the last resourceVersion, as after a clean end.
          this.stats.lifetimeRestarts++;
          continue;
        }
        if (watching && !this.#immediateRetryUsed) {
          this.#immediateRetryUsed = true;
          continue;
        }
        await this.#fail(this.#networkError(err, attempt.reason));
      } finally {
        attempt.dispose();
        if (this.#attempt === attempt) this.#attempt = undefined;
      }
    }
  }

  /**
   * Reads the watch until it ends, applying events. Returns EXPIRED on a 410, `silent` when the
   * stream ended without a single event or bookmark, `delivered` otherwise.
   */
  async #consume(
    batches: AsyncGenerator<string[]>,
    attempt: Attempt,
  ): Promise<typeof EXPIRED | 'silent' | 'delivered'> {
    let delivered = false;
    for await (const lines of batches) {
      attempt.touch();
      let changed = false;
      try {
        for (const line of lines) {
          const outcome = this.#applyEvent(line);
          if (outcome === EXPIRED) return EXPIRED;
          if (outcome) changed = true;
          if (!delivered) {
            // A good event or bookmark: the server is healthy again.
            delivered = true;
            this.#backoff.reset();
            this.#immediateRetryUsed = false;
            this.#expiredStreak = 0;
          }
        }
      } finally {
        if (changed && !this.#closed) this.#o.onChange();
      }
    }
    return delivered ? 'delivered' : 'silent';
  }

  /** Applies one watch line; true when the copy changed. */
  #applyEvent(line: string): boolean | typeof EXPIRED {
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch (err) {
      throw new EvenlbError(ErrorCodes.DISCOVERY_FAILED, `${this.#o.description}: malformed watch event`, {
        cause: err,
      });
    }
    if (!isRecord(event) || typeof event.type !== 'string') return false;
    const object = event.object;
    switch (event.type) {
      case 'ADDED':
      case 'MODIFIED':
      case 'DELETED': {
        const rv = resourceVersionOf(object);
        if (rv !== undefined) this.#resourceVersion = rv;
        const name = objectName(object);
        if (name === undefined) return false;
        if (event.type === 'DELETED') return this.#items.delete(name);
        if (!this.#o.accept(object)) return this.#items.delete(name);
        this.#items.set(name, object);
        return true;
      }
      case 'BOOKMARK': {
        const rv = resourceVersionOf(object);
        if (rv !== undefined) this.#resourceVersion = rv;
        return false;
      }
      case 'ERROR': {
        if (isExpiredStatus(object)) return EXPIRED;
        const status = isRecord(object) ? object : {};
        throw new EvenlbError(
          ErrorCodes.DISCOVERY_FAILED,
          `${this.#o.description}: watch error ${String(status.code ?? '')} ${String(status.reason ?? '')}: ${String(status.message ?? '')}`.trim(),
          { details: { statusCode: status.code, reason: status.reason } },
        );
      }
      default:
        return false;
    }
  }

  /** A fresh attempt for the next request of a paged LIST (so `close()` aborts it). */
  #nextAttempt(): Attempt {
    const attempt = new Attempt(this.#o.clock, this.#o.timing.requestTimeoutMs);
    this.#attempt = attempt;
    return attempt;
  }

  /** Checks one LIST page: its items, resourceVersion and continue token (absent on the last page). */
  #listPage(value: unknown): { items: unknown[]; resourceVersion: string; continueToken: string | undefined } {
    const rv = resourceVersionOf(value);
    if (!isRecord(value) || !Array.isArray(value.items) || rv === undefined || !isRecord(value.metadata)) {
      throw new EvenlbError(
        ErrorCodes.DISCOVERY_FAILED,
        `${this.#o.description}: malformed LIST response (expected items and metadata.resourceVersion)`,
      );
    }
    const token = value.metadata.continue;
    return {
      items: value.items,
      resourceVersion: rv,
      continueToken: typeof token === 'string' && token !== '' ? token : undefined,
    };
  }

  #applyList(items: readonly unknown[], rv: string): void {
    // Replace in one step: consumers never see a half-applied re-list, nor a partial paged one.
    this.#items.clear();
    for (const item of items) {
      const name = objectName(item);
      if (name !== undefined && this.#o.accept(item)) this.#items.set(name, item);
    }
    this.#resourceVersion = rv;
    this.#synced = true;
    this.stats.lists++;
  }

  #statusError(verb: 'list' | 'watch', result: Extract<ApiResult<unknown>, { type: 'status' }>): EvenlbError {
    const { statusCode, status } = result;
    let hint = '';
    if (statusCode === 401) hint = ' (the token was rejected: check the credentials)';
    else if (statusCode === 403) hint = ' (RBAC: the identity needs list and watch on it; see deploy/rbac/)';
    else if (statusCode === 404) hint = ' (the API is not served: discovery.k8s.io/v1 needs Kubernetes >= 1.21)';
    const detail = status?.message ?? status?.reason ?? '';
    return new EvenlbError(
      ErrorCodes.DISCOVERY_FAILED,
      `${this.#o.description}: ${verb} failed with HTTP ${statusCode}${detail === '' ? '' : `: ${detail}`}${hint}`,
      { details: { verb, statusCode, reason: status?.reason, path: this.#o.path } },
    );
  }

  #networkError(err: unknown, reason: AbortReason | undefined): EvenlbError {
    if (reason === 'timeout') {
      return new EvenlbError(
        ErrorCodes.DISCOVERY_FAILED,
        `${this.#o.description}: no answer from ${describeConnection(this.#o.client.connection.config)} within ${this.#o.timing.requestTimeoutMs} ms`,
        { cause: err },
      );
    }
    // Already explained (a bad kubeconfig names its field): report it as it is.
    if (
      err instanceof EvenlbError &&
      (err.code === ErrorCodes.DISCOVERY_FAILED ||
        err.code === ErrorCodes.INVALID_CONFIG ||
        err.code === ErrorCodes.MISSING_PACKAGE)
    ) {
      return err;
    }
    const message = err instanceof Error ? err.message : String(err);
    const code = isRecord(err) && typeof err.code === 'string' ? ` (${err.code})` : '';
    return new EvenlbError(
      ErrorCodes.DISCOVERY_FAILED,
      `${this.#o.description}: cannot reach ${describeConnection(this.#o.client.connection.config)}: ${message}${code}`,
      { cause: err },
    );
  }

  /**
   * Counts a 410. The first one re-lists at once; another right after a fresh LIST (nothing
   * delivered in between) waits the backoff delay first, so a broken server is not hammered.
   */
  async #expired(): Promise<void> {
    this.stats.expired++;
    this.#expiredStreak++;
    if (this.#expiredStreak > 1) await this.#pause(this.#backoff.next());
  }

  /** Records a failure (keeping the copy), then waits the backoff delay. */
  async #fail(error: EvenlbError, retryAfterMs?: number): Promise<void> {
    this.stats.failures++;
    if (this.#failure === undefined || this.#failure.message !== error.message) {
      this.#failure = error;
      this.#o.onChange();
    }
    const delayMs = this.#backoff.next();
    await this.#pause(
      retryAfterMs === undefined ? delayMs : Math.min(Math.max(delayMs, retryAfterMs), this.#o.timing.backoffMaxMs),
    );
  }

  #pause(ms: number): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = this.#o.clock.setTimeout(() => {
        this.#sleep = undefined;
        resolve();
      }, ms);
      this.#sleep = { timer, resolve };
    });
  }
}
