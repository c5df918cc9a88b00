/**
 * Connection lifetime, as a pure policy shared by the client pools, the server-side recycler,
 * the proxy and the simulator. It answers one question — may this connection carry another
 * request, and if not, why — from the connection's counters and the time, so every component
 * retires connections by the same rules:
 *
 * - `maxRequestsPerConnection`: exactly N requests, then retire (no off-by-one).
 * - `maxConnectionAgeMs`: each connection draws its own limit, jittered ±`ageJitter`
 *   (default 10%) so connections opened together do not all close together.
 * - `idleTimeoutMs`: an idle connection past this closes.
 */
import { opt, type Parsed, parseOptions } from '../core/options.js';
import type { Random } from '../core/random.js';

export const lifetimeOptionsSpec = {
  /** Requests a connection carries before it is retired; unset = unlimited. */
  maxRequestsPerConnection: opt.int({ min: 1, optional: true }),
  /** Age (ms) after which a connection is retired; unset = unlimited. */
  maxConnectionAgeMs: opt.number({ min: 0, exclusiveMin: true, optional: true }),
  /** Fraction of jitter applied to `maxConnectionAgeMs`, 0..0.5; default 0.1 (±10%). */
  ageJitter: opt.number({ min: 0, max: 0.5, default: 0.1 }),
  /** Idle time (ms) after which a connection is closed; unset = never (the peer decides). */
  idleTimeoutMs: opt.number({ min: 0, exclusiveMin: true, optional: true }),
};

export type LifetimeOptions = Parsed<typeof lifetimeOptionsSpec>;

/** Why a connection was (or will be) closed. Shared vocabulary for metrics and stats. */
export type CloseReason =
  | 'requests'
  | 'age'
  | 'idle'
  | 'shutdown'
  | 'endpoint-removed'
  | 'error'
  | 'peer'
  /** Fair-share shedding: the server's load was above the fleet mean by more than its tolerance. */
  | 'fair-share';

/** The counters the policy reads. */
export interface ConnectionLife {
  /** When the connection opened (clock ms). */
  readonly openedAtMs: number;
  /** This connection's own age limit, from `drawMaxAgeMs()`; undefined = none. */
  readonly maxAgeMs: number | undefined;
  /** Requests started on the connection so far. */
  readonly requests: number;
  /** Requests currently in flight on it. */
  readonly inFlight: number;
  /** When it last became idle (clock ms); meaningful only when `inFlight === 0`. */
  readonly idleSinceMs: number;
}

export type LifetimeVerdict =
  | { readonly type: 'open' }
  | { readonly type: 'retire'; readonly reason: 'requests' | 'age' | 'idle' };

const OPEN: LifetimeVerdict = Object.freeze({ type: 'open' });
const RETIRE = Object.freeze({
  requests: Object.freeze({ type: 'retire', reason: 'requests' }),
  age: Object.freeze({ type: 'retire', reason: 'age' }),
  idle: Object.freeze({ type: 'retire', reason: 'idle' }),
} as const);

export class LifetimePolicy {
  readonly options: LifetimeOptions;
  readonly #random: Random;

  /** `input` is validated with the shared options parser (component name in errors). */
  constructor(input: unknown, random: Random, component = 'connection lifetime') {
    this.options = parseOptions(component, input, lifetimeOptionsSpec);
    this.#random = random;
  }

  /** True when no limit is set: connections live until the peer or the caller closes them. */
  get unlimited(): boolean {
    const o = this.options;
    return (
      o.maxRequestsPerConnection === undefined && o.maxConnectionAgeMs === undefined && o.idleTimeoutMs === undefined
    );
  }

  /** A new connection's own age limit, jittered uniformly in [1-j, 1+j] × maxConnectionAgeMs. */
  drawMaxAgeMs(): number | undefined {
    const { maxConnectionAgeMs: age, ageJitter } = this.options;
    if (age === undefined) return undefined;
    return age * (1 - ageJitter + 2 * ageJitter * this.#random.next());
  }

  /** May the connection take one more request now? (Checked before dispatching on it.) */
  canCarryAnother(life: ConnectionLife, nowMs: number): LifetimeVerdict {
    const max = this.options.maxRequestsPerConnection;
    if (max !== undefined && life.requests >= max) return RETIRE.requests;
    if (life.maxAgeMs !== undefined && nowMs - life.openedAtMs >= life.maxAgeMs) return RETIRE.age;
    if (life.inFlight === 0 && this.#idleExpired(life, nowMs)) return RETIRE.idle;
    return OPEN;
  }

  /** Is the request being started now the connection's last (server: send `Connection: close`)? */
  isLastRequest(requestsIncludingThis: number): boolean {
    const max = this.options.maxRequestsPerConnection;
    return max !== undefined && requestsIncludingThis >= max;
  }

  /** Should an idle connection be closed now? */
  idleVerdict(life: ConnectionLife, nowMs: number): LifetimeVerdict {
    if (life.inFlight > 0) return OPEN;
    const v = this.canCarryAnother(life, nowMs);
    return v;
  }

  /**
   * Milliseconds from `nowMs` until the connection's next deadline (age, or idle when idle),
   * or undefined when none applies. Callers arm one timer for it.
   */
  nextDeadlineInMs(life: ConnectionLife, nowMs: number): number | undefined {
    let next: number | undefined;
    if (life.maxAgeMs !== undefined) next = life.openedAtMs + life.maxAgeMs - nowMs;
    const idle = this.options.idleTimeoutMs;
    if (idle !== undefined && life.inFlight === 0) {
      const t = life.idleSinceMs + idle - nowMs;
      next = next === undefined ? t : Math.min(next, t);
    }
    return next === undefined ? undefined : Math.max(0, next);
  }

  #idleExpired(life: ConnectionLife, nowMs: number): boolean {
    const idle = this.options.idleTimeoutMs;
    return idle !== undefined && nowMs - life.idleSinceMs >= idle;
  }
}
