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
import type { TimerHandle } from '../../core/clock.js';
import type { EvenlbError } from '../../core/errors.js';
import { Backoff } from './backoff.js';
import { isExpiredStatus, objectName } from './kube-objects.js';
import { DEFAULT_LIST_PAGE_SIZE, type ReflectorOptions, type ReflectorStats } from './reflector-options.js';
import {
  networkError,
  type ReflectorTarget,
  readListPage,
  readWatchEvent,
  statusError,
} from './reflector-responses.js';
import { RequestAttempt as Attempt } from './request-attempt.js';

/** How long past its requested `timeoutSeconds` a watch may stay open before it is ended here. */
const WATCH_LIFETIME_GRACE_MS = 60_000;

/** The watch ended because the resourceVersion expired. */
const EXPIRED = Symbol('expired');

export class ResourceReflector<T> {
  readonly #o: ReflectorOptions<T>;
  readonly #target: ReflectorTarget;
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
    this.#target = {
      client: options.client,
      path: options.path,
      description: options.description,
      requestTimeoutMs: options.timing.requestTimeoutMs,
    };
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
        await this.#fail(networkError(this.#target, err, undefined));
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
              await this.#fail(statusError(this.#target, 'list', listed), listed.retryAfterMs);
              failed = true;
              break;
            }
            const page = readListPage(listed.value, this.#o.description);
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
          await this.#fail(statusError(this.#target, 'watch', opened), opened.retryAfterMs);
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
        await this.#fail(networkError(this.#target, err, attempt.reason));
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
    const event = readWatchEvent(line, this.#o.description);
    switch (event.type) {
      case 'ADDED':
      case 'MODIFIED':
      case 'DELETED': {
        if (event.resourceVersion !== undefined) this.#resourceVersion = event.resourceVersion;
        const { name, object } = event;
        if (name === undefined) return false;
        if (event.type === 'DELETED' || !this.#o.accept(object)) return this.#items.delete(name);
        this.#items.set(name, object);
        return true;
      }
      case 'BOOKMARK':
        if (event.resourceVersion !== undefined) this.#resourceVersion = event.resourceVersion;
        return false;
      case 'EXPIRED':
        return EXPIRED;
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
