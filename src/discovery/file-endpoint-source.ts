/**
 * `file:///path/endpoints.json`: endpoints from a JSON file, followed as it changes. The file
 * holds an array of endpoints (or `{ "endpoints": [...] }`), each
 * `{ "address", "port", "conditions"?: { "ready", "serving", "terminating" }, "weight"?, "zone"?,
 * "nodeName"?, "targetRef"? }` with Kubernetes' condition defaults.
 *
 * Changes are noticed through `fs.watch` on the directory (atomic renames replace the file's
 * inode, so watching the file itself would go deaf) and, as a fallback for file systems
 * without notifications, a `stat` poll every `pollIntervalMs`. A missing file before the first
 * good read is `not-found`; a broken, half-written or vanished file later keeps the last good
 * set, turns the status `degraded` and logs why. Late reads are dropped by a generation check.
 *
 * @example
 * const source = new FileEndpointSource({ path: '/etc/evenlb/endpoints.json' });
 * await source.ready();
 * source.snapshot().endpoints.size;
 */
import { type FSWatcher, watch } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute } from 'node:path';
import { type Clock, isClock, systemClock, type TimerHandle } from '../core/clock.js';
import { EndpointSet } from '../core/endpoint-set.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { opt, parseOptions } from '../core/options.js';
import { type DiscoveryLogger, discoveryLogger, isDiscoveryLogger } from './discovery-logger.js';
import { BaseEndpointSource } from './endpoint-source.js';

const fileSourceSpec = {
  /** Absolute path of the JSON file. */
  path: opt.custom<string, Record<string, never>>(
    'an absolute path',
    (v): v is string => typeof v === 'string' && isAbsolute(v),
  ),
  /** `stat` poll interval (ms), the fallback when no watch event arrives; default 1000. */
  pollIntervalMs: opt.number({ min: 10, default: 1_000 }),
  /** Wait this long after a watch event before reading (ms), to let writers finish; default 25. */
  debounceMs: opt.number({ min: 0, default: 25 }),
  /** Use `fs.watch` (in addition to polling); default true. */
  watch: opt.boolean({ default: true }),
  clock: opt.custom<Clock, { optional: true }>('a Clock', isClock, { optional: true }),
  logger: opt.custom<DiscoveryLogger, { optional: true }>('a logger with warn() and info()', isDiscoveryLogger, {
    optional: true,
  }),
};

export interface FileEndpointSourceOptions {
  path: string;
  pollIntervalMs?: number;
  debounceMs?: number;
  watch?: boolean;
  clock?: Clock | undefined;
  logger?: DiscoveryLogger;
}

export class FileEndpointSource extends BaseEndpointSource {
  readonly path: string;
  readonly #pollIntervalMs: number;
  readonly #debounceMs: number;
  readonly #clock: Clock;
  readonly #logger: DiscoveryLogger | undefined;
  #watcher: FSWatcher | undefined;
  #pollTimer: TimerHandle | undefined;
  #debounceTimer: TimerHandle | undefined;
  #generation = 0;
  #loadedOnce = false;
  /** `mtime:size:ino` of the file at the last read, to notice changes while polling. */
  #signature = '';

  constructor(input: FileEndpointSourceOptions) {
    const o = parseOptions('file endpoint source', input, fileSourceSpec);
    super(`file://${o.path}`);
    this.path = o.path;
    this.#pollIntervalMs = o.pollIntervalMs;
    this.#debounceMs = o.debounceMs;
    this.#clock = o.clock ?? systemClock;
    this.#logger = o.logger;
    if (o.watch) this.#startWatch();
    void this.#reload();
    this.#schedulePoll();
  }

  /** Reads the file again now (tests and callers that know it changed). */
  refresh(): Promise<void> {
    return this.#reload();
  }

  protected onClose(): void {
    this.#generation++;
    this.#watcher?.close();
    this.#pollTimer?.cancel();
    this.#debounceTimer?.cancel();
  }

  #log(): DiscoveryLogger {
    return this.#logger ?? discoveryLogger();
  }

  #startWatch(): void {
    const name = basename(this.path);
    try {
      this.#watcher = watch(dirname(this.path), { persistent: false }, (_event, filename) => {
        if (filename !== null && filename.toString() !== name) return;
        this.#debounceTimer?.cancel();
        this.#debounceTimer = this.#clock.setTimeout(() => void this.#reload(), this.#debounceMs);
      });
      this.#watcher.on('error', () => {
        // The directory went away or the watch broke; polling carries on.
        this.#watcher?.close();
        this.#watcher = undefined;
      });
    } catch {
      this.#watcher = undefined;
    }
  }

  #schedulePoll(): void {
    if (this.closed) return;
    this.#pollTimer = this.#clock.setTimeout(async () => {
      const generation = this.#generation;
      let signature = 'missing';
      try {
        const s = await stat(this.path);
        signature = `${s.mtimeMs}:${s.size}:${s.ino}`;
      } catch {}
      if (generation === this.#generation && signature !== this.#signature) await this.#reload();
      this.#schedulePoll();
    }, this.#pollIntervalMs);
  }

  async #reload(): Promise<void> {
    const generation = ++this.#generation;
    let text: string;
    let signature = 'missing';
    try {
      const s = await stat(this.path);
      signature = `${s.mtimeMs}:${s.size}:${s.ino}`;
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if (generation !== this.#generation || this.closed) return;
      this.#signature = signature;
      const code = (err as NodeJS.ErrnoException).code;
      const error = new EvenlbError(
        code === 'ENOENT' ? ErrorCodes.SERVICE_NOT_FOUND : ErrorCodes.DISCOVERY_FAILED,
        `endpoint file ${this.path}: ${code === 'ENOENT' ? 'does not exist' : (err as Error).message}`,
        { cause: err, details: { path: this.path } },
      );
      if (!this.#loadedOnce && code === 'ENOENT') this.publishNotFound(error);
      else this.#fail(error);
      return;
    }
    if (generation !== this.#generation || this.closed) return;
    this.#signature = signature;
    let set: EndpointSet;
    try {
      const doc: unknown = JSON.parse(text);
      const list = Array.isArray(doc) ? doc : (doc as { endpoints?: unknown } | null)?.endpoints;
      if (!Array.isArray(list)) throw new Error('expected a JSON array of endpoints or { "endpoints": [...] }');
      set = EndpointSet.from(list);
    } catch (err) {
      this.#fail(
        new EvenlbError(
          ErrorCodes.DISCOVERY_FAILED,
          `endpoint file ${this.path} is invalid: ${(err as Error).message}`,
          {
            cause: err,
            details: { path: this.path },
          },
        ),
      );
      return;
    }
    this.#loadedOnce = true;
    this.publishEndpoints(set);
  }

  #fail(error: EvenlbError): void {
    this.#log().warn(
      { path: this.path, kept: this.snapshot().endpoints.size, err: error.message },
      'endpoint file unusable; keeping the last good endpoint set',
    );
    this.publishFailure(error);
  }
}
