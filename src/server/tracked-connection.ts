/**
 * One server connection as the recycler sees it: the shared `ConnectionLife` counters plus the
 * protocol-neutral part of retiring. A connection is `open`, then possibly `retiring` (a limit
 * was reached or the server is draining: it takes no new work beyond what its protocol needs to
 * close cleanly), then `closed`. One timer per connection fires at its next deadline (age, idle,
 * or the end of a retiring idle delay); the `LifetimePolicy` decides, the protocol subclass
 * acts (HTTP/1: `Connection: close`; HTTP/2: GOAWAY). Retiring never cuts a response: only
 * `graceMs` (recycler) or the drain's grace destroys a connection that still has work.
 */
import type { TimerHandle } from '../core/clock.js';
import type { ServerProtocol } from '../metrics/server-metrics.js';
import type { CloseReason, ConnectionLife } from '../pool/lifetime-policy.js';
import type { RecyclerSettings } from './recycler-options.js';

/** What a connection needs from the registry that owns it. */
export interface ConnectionHost {
  /** Current settings (they change when a recycler attaches or detaches). */
  readonly settings: RecyclerSettings;
  /** True once the server started draining: every connection retires with `shutdown`. */
  readonly draining: boolean;
  /** The server's own HTTP/1 keep-alive timeout (`server.keepAliveTimeout`); 0 or undefined = none. */
  readonly keepAliveTimeoutMs: number | undefined;
  /** Called exactly once, when the connection has closed. */
  onClosed(connection: TrackedConnection, reason: CloseReason): void;
}

export abstract class TrackedConnection implements ConnectionLife {
  abstract readonly protocol: ServerProtocol;
  readonly openedAtMs: number;
  maxAgeMs: number | undefined;
  requests = 0;
  inFlight = 0;
  idleSinceMs: number;
  protected readonly host: ConnectionHost;
  #retiring: CloseReason | undefined;
  #destroyedFor: CloseReason | undefined;
  #closed = false;
  #timer: TimerHandle | undefined;
  #graceTimer: TimerHandle | undefined;

  protected constructor(host: ConnectionHost) {
    this.host = host;
    this.openedAtMs = host.settings.clock.now();
    this.idleSinceMs = this.openedAtMs;
    this.maxAgeMs = host.settings.policy.drawMaxAgeMs();
  }

  /** Why the connection is retiring, or undefined while it is open. */
  get retiring(): CloseReason | undefined {
    return this.#retiring;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Arms the first deadline; the registry calls it once the connection is registered. */
  start(): void {
    if (this.host.draining) this.retire('shutdown');
    else this.arm();
  }

  /** Re-reads the settings after a recycler attached or detached: a fresh age limit, new timers. */
  reconfigure(): void {
    if (this.#closed) return;
    this.maxAgeMs = this.host.settings.policy.drawMaxAgeMs();
    this.arm();
  }

  /**
   * Starts retiring for `reason`: the connection finishes its in-flight work and closes. The
   * first reason wins; later calls are no-ops.
   */
  retire(reason: CloseReason): void {
    if (this.#closed || this.#retiring !== undefined) return;
    this.#retiring = reason;
    const { options, clock } = this.host.settings;
    // Fair-share shedding waits for the connection's next response boundary however long that
    // takes: an idle connection carries no load, and cutting it would race its client.
    if (options.graceMs !== undefined && reason !== 'shutdown' && reason !== 'fair-share') {
      // An HTTP/1 connection may retire by age a little before its limit (its last response
      // is sent with `Connection: close`): the grace still counts from the limit itself.
      let graceMs = options.graceMs;
      if (reason === 'age' && this.maxAgeMs !== undefined) {
        graceMs += Math.max(0, this.openedAtMs + this.maxAgeMs - clock.now());
      }
      this.#graceTimer = clock.setTimeout(() => this.destroy(reason), graceMs);
    }
    this.onRetire(reason);
    this.arm();
  }

  /** Closes the transport now, cutting whatever is in flight. Idempotent. */
  destroy(reason: CloseReason): void {
    if (this.#closed) return;
    this.#destroyedFor ??= reason;
    this.destroyTransport();
  }

  /**
   * Stops tracking without touching the transport (the socket left HTTP: WebSocket, CONNECT);
   * reported closed with reason `peer`.
   */
  abandon(): void {
    this.#destroyedFor ??= 'peer';
    this.markClosed();
  }

  /** Subclasses call this when a request (stream) starts on the connection. */
  protected requestStarted(): void {
    this.requests++;
    this.inFlight++;
    this.arm();
  }

  /** Subclasses call this when a request (stream) has ended, completed or not. */
  protected requestEnded(): void {
    this.inFlight--;
    if (this.inFlight === 0) this.idleSinceMs = this.host.settings.clock.now();
    this.arm();
  }

  /** Subclasses call this once, when the transport has closed. */
  protected markClosed(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#timer?.cancel();
    this.#graceTimer?.cancel();
    this.host.onClosed(this, this.#destroyedFor ?? this.#retiring ?? 'peer');
  }

  /** Protocol action when retiring starts (send `Connection: close`, GOAWAY, or close if idle). */
  protected abstract onRetire(reason: CloseReason): void;
  /** Protocol action on a timer tick while retiring; `nowMs` is the clock's time. */
  protected abstract onRetiringTick(nowMs: number): void;
  /** Milliseconds until the next retiring tick, or undefined for none. */
  protected abstract retiringTickInMs(nowMs: number): number | undefined;
  /** Abrupt close of the socket or session. */
  protected abstract destroyTransport(): void;

  /** (Re)arms the single timer for the next deadline. */
  protected arm(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    if (this.#closed) return;
    const clock = this.host.settings.clock;
    const now = clock.now();
    const delay =
      this.#retiring === undefined ? this.host.settings.policy.nextDeadlineInMs(this, now) : this.retiringTickInMs(now);
    if (delay === undefined) return;
    this.#timer = clock.setTimeout(() => this.#check(), delay);
  }

  #check(): void {
    this.#timer = undefined;
    if (this.#closed) return;
    const now = this.host.settings.clock.now();
    if (this.#retiring !== undefined) {
      this.onRetiringTick(now);
      return;
    }
    const verdict = this.host.settings.policy.canCarryAnother(this, now);
    if (verdict.type === 'retire') this.retire(verdict.reason);
    else this.arm();
  }
}
