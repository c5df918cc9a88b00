/**
 * What a `ResourceReflector` is given and what it counts: the collection it follows, its
 * timing (every value configurable so tests run fast), its LIST page size, and its counters
 * for diagnostics and tests. See `resource-reflector.ts` for the rules they drive.
 */
import type { Clock } from '../../core/clock.js';
import type { Random } from '../../core/random.js';
import type { KubeApiClient, Query } from './kube-api-client.js';

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
