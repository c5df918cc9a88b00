/**
 * The WATCH side of the fake Kubernetes API server: open watches stream chunked JSON lines
 * (the current state as ADDED events, or the history after a resourceVersion, `ERROR` 410 when
 * that version was compacted away), then every change they match, bookmarks when asked, and end
 * after `timeoutSeconds`. Tests break them through the server's hooks: expire, drop, stall, end.
 */
import type http from 'node:http';
import type { Socket } from 'node:net';
import {
  type FakeResource,
  type HistoryEvent,
  RESOURCES,
  type StoredObject,
  statusObject,
} from './fake-kube-resources.js';
import type { FakeKubeStore } from './fake-kube-store.js';

interface Watcher {
  readonly resource: FakeResource;
  readonly namespace: string | undefined;
  readonly matches: (object: StoredObject) => boolean;
  readonly res: http.ServerResponse;
  readonly socket: Socket;
  readonly bookmarks: boolean;
  stalled: boolean;
  timers: NodeJS.Timeout[];
}

export class FakeKubeWatches {
  readonly #watchers = new Set<Watcher>();
  readonly #store: FakeKubeStore;

  constructor(store: FakeKubeStore) {
    this.#store = store;
  }

  /** Answers a WATCH request on `res` and keeps it open. */

  start(
    resource: FakeResource,
    namespace: string | undefined,
    matches: (object: StoredObject) => boolean,
    query: Record<string, string>,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): void {
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    const watcher: Watcher = {
      resource,
      namespace,
      matches,
      res,
      socket: req.socket,
      bookmarks: query.allowWatchBookmarks === 'true',
      stalled: false,
      timers: [],
    };
    const fromText = query.resourceVersion;
    if (fromText === undefined || fromText === '' || fromText === '0') {
      // No version: the current state as synthetic ADDED events, then changes.
      for (const [key, object] of this.#store.entries()) {
        if (key.startsWith(`${resource}/`) && matches(object)) this.#write(watcher, { type: 'ADDED', object });
      }
    } else {
      const from = Number(fromText);
      if (!Number.isInteger(from) || from < this.#store.compactedRv) {
        this.#write(
          watcher,
          {
            type: 'ERROR',
            object: statusObject(410, `too old resource version: ${fromText} (${this.#store.compactedRv})`),
          },
          true,
        );
        res.end();
        return;
      }
      for (const event of this.#store.history) if (event.rv > from) this.#deliverTo(watcher, event);
    }
    this.#watchers.add(watcher);
    const timeoutSeconds = Number(query.timeoutSeconds);
    if (Number.isFinite(timeoutSeconds) && timeoutSeconds > 0) {
      // A stalled watch sends nothing, not even the end of the stream.
      const t = setTimeout(() => {
        if (!watcher.stalled) this.#endWatch(watcher);
      }, timeoutSeconds * 1000);
      t.unref();
      watcher.timers.push(t);
    }
    res.on('close', () => this.#removeWatcher(watcher));
  }

  /** Delivers a recorded change to every open watch it concerns. */
  deliver(event: HistoryEvent): void {
    for (const w of this.#watchers) this.#deliverTo(w, event);
  }

  /** Sends `ERROR` 410 Expired to every open watch and ends it (etcd compaction mid-stream). */
  expire(): number {
    let n = 0;
    for (const w of [...this.#watchers]) {
      n++;
      this.#write(w, { type: 'ERROR', object: statusObject(410, 'too old resource version', undefined) }, true);
      this.#endWatch(w);
    }
    return n;
  }

  /** Destroys the socket of every open watch (a connection reset); returns how many. */
  drop(): number {
    let n = 0;
    for (const w of [...this.#watchers]) {
      n++;
      this.#removeWatcher(w);
      w.socket.destroy();
    }
    return n;
  }

  /** Makes every open watch silent: it stays open but never sends anything again. */
  stall(): number {
    for (const w of this.#watchers) w.stalled = true;
    return this.#watchers.size;
  }

  /** Ends every open watch cleanly, as the server does when `timeoutSeconds` runs out. */
  end(): number {
    const n = this.#watchers.size;
    for (const w of [...this.#watchers]) this.#endWatch(w);
    return n;
  }

  /** Sends a BOOKMARK with the current resourceVersion to every bookmark-enabled watch. */
  sendBookmarks(): void {
    for (const w of this.#watchers) {
      if (!w.bookmarks) continue;
      const info = RESOURCES[w.resource];
      this.#write(w, {
        type: 'BOOKMARK',
        object: { kind: info.kind, apiVersion: info.version, metadata: { resourceVersion: String(this.#store.rv) } },
      });
    }
  }

  /** Forgets every open watch without writing to it (its connection is being destroyed). */
  forgetAll(): void {
    for (const w of [...this.#watchers]) this.#removeWatcher(w);
  }

  /** Open watch connections, optionally only those on one resource (and namespace). */
  count(filter: { resource?: FakeResource; namespace?: string } = {}): number {
    let n = 0;
    for (const w of this.#watchers) {
      if (filter.resource !== undefined && w.resource !== filter.resource) continue;
      if (filter.namespace !== undefined && w.namespace !== filter.namespace) continue;
      n++;
    }
    return n;
  }

  #deliverTo(w: Watcher, event: HistoryEvent): void {
    if (event.resource !== w.resource) return;
    const now = w.matches(event.object);
    const before = event.previous !== undefined && w.matches(event.previous);
    let type: 'ADDED' | 'MODIFIED' | 'DELETED' | undefined;
    if (event.type === 'ADDED') type = now ? 'ADDED' : undefined;
    else if (event.type === 'DELETED') type = before ? 'DELETED' : undefined;
    else if (before && now) type = 'MODIFIED';
    else if (now) type = 'ADDED';
    else if (before) type = 'DELETED';
    if (type !== undefined) this.#write(w, { type, object: event.object });
  }

  #write(w: Watcher, event: unknown, evenIfStalled = false): void {
    if (w.stalled && !evenIfStalled) return;
    if (w.res.writableEnded || w.res.destroyed) return;
    w.res.write(`${JSON.stringify(event)}\n`);
  }

  #endWatch(w: Watcher): void {
    this.#removeWatcher(w);
    if (!w.res.writableEnded) w.res.end();
  }

  #removeWatcher(w: Watcher): void {
    this.#watchers.delete(w);
    for (const t of w.timers) clearTimeout(t);
    w.timers.length = 0;
  }
}
