/**
 * Per-call accounting for gRPC calls: the same load records (`EndpointLoad`: in flight, peak-EWMA
 * latency, errors) the client and the proxy feed, so `least-request` and `peak-ewma` see every
 * call.
 *
 * grpc-js starts a picked call asynchronously (after call credentials resolve) and calls the pick
 * result's `onCallStarted` only if the stream was really opened; a call can also be picked, then
 * re-picked (its subchannel dropped in between) or end before it starts, and then neither hook
 * runs. Counting only from `onCallStarted` would make a burst of picks in one tick all see zero in
 * flight, so a call counts from its pick; picks that have not started by the next timer turn are
 * taken back (a late `onCallStarted`, behind slow call credentials, counts the call again). A call
 * ends exactly once, in `onCallEnded`, with its gRPC status code.
 */
import type { EndpointLoad } from '../balancing/endpoint-load.js';
import type { RequestOutcome } from '../cluster/cluster-options.js';
import type { EndpointEntry } from '../cluster/endpoint-entry.js';
import type { Clock, TimerHandle } from '../core/clock.js';

/** gRPC `CANCELLED`: the caller gave up; not the endpoint's fault. */
const CANCELLED = 1;
/** gRPC `UNAVAILABLE`: the transport failed. */
const UNAVAILABLE = 14;

/**
 * How a call with gRPC status `code` ended, in the client's vocabulary: OK and application
 * errors (not in `failureCodes`) are `success`, `CANCELLED` is `aborted`, `UNAVAILABLE` a
 * `transport-error`, other failure codes an `http-error` (a 5xx).
 */
export function outcomeOf(code: number, failureCodes: ReadonlySet<number>): RequestOutcome {
  if (code === 0) return 'success';
  if (code === CANCELLED) return 'aborted';
  if (!failureCodes.has(code)) return 'success';
  return code === UNAVAILABLE ? 'transport-error' : 'http-error';
}

/** One picked call. */
export class CallTicket {
  readonly key: string;
  readonly load: EndpointLoad;
  readonly entry: EndpointEntry;
  startMs: number;
  epoch: number;
  state: 'picked' | 'started' | 'withdrawn' | 'ended' = 'picked';

  constructor(key: string, load: EndpointLoad, entry: EndpointEntry, startMs: number, epoch: number) {
    this.key = key;
    this.load = load;
    this.entry = entry;
    this.startMs = startMs;
    this.epoch = epoch;
  }
}

/** What happens when a call ends (outlier detection, metrics, releasing a drained subchannel). */
export type CallEndedHook = (ticket: CallTicket, outcome: RequestOutcome, durationMs: number) => void;

export class CallTracker {
  readonly #clock: Clock;
  readonly #bucketMs: number;
  readonly #failureCodes: ReadonlySet<number>;
  readonly #onEnded: CallEndedHook;
  readonly #onWithdrawn: (ticket: CallTicket) => void;
  #unstarted: CallTicket[] = [];
  #timer: TimerHandle | undefined;
  /** Calls started, ever. */
  requests = 0;

  /** `onWithdrawn` runs for a pick taken back (its endpoint may now be idle). */
  constructor(
    clock: Clock,
    bucketMs: number,
    failureCodes: readonly number[],
    onEnded: CallEndedHook,
    onWithdrawn: (ticket: CallTicket) => void,
  ) {
    this.#clock = clock;
    this.#bucketMs = bucketMs;
    this.#failureCodes = new Set(failureCodes);
    this.#onEnded = onEnded;
    this.#onWithdrawn = onWithdrawn;
  }

  /** Counts a call picked for `key` from now; grpc-js then calls `started` and `ended`. */
  begin(key: string, load: EndpointLoad, entry: EndpointEntry): CallTicket {
    const startMs = load.start();
    const epoch = Math.floor(startMs / this.#bucketMs);
    entry.window.add(epoch);
    this.requests++;
    const ticket = new CallTicket(key, load, entry, startMs, epoch);
    this.#unstarted.push(ticket);
    this.#timer ??= this.#clock.setTimeout(() => this.#withdrawUnstarted(), 0);
    return ticket;
  }

  /** grpc-js opened the call's stream. */
  started(ticket: CallTicket): void {
    if (ticket.state === 'picked') {
      ticket.state = 'started';
    } else if (ticket.state === 'withdrawn') {
      ticket.state = 'started';
      ticket.startMs = ticket.load.start();
      ticket.epoch = Math.floor(ticket.startMs / this.#bucketMs);
      ticket.entry.window.add(ticket.epoch);
      this.requests++;
    }
  }

  /** The call ended with gRPC status `code`. Later calls for the same ticket are ignored. */
  ended(ticket: CallTicket, code: number): void {
    if (ticket.state !== 'started') return;
    ticket.state = 'ended';
    const outcome = outcomeOf(code, this.#failureCodes);
    ticket.load.end(ticket.startMs, outcome === 'success' || outcome === 'aborted');
    this.#onEnded(ticket, outcome, this.#clock.now() - ticket.startMs);
  }

  /** Stops the withdrawal timer (the balancer is being destroyed). */
  close(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#withdrawUnstarted();
  }

  #withdrawUnstarted(): void {
    this.#timer = undefined;
    const list = this.#unstarted;
    this.#unstarted = [];
    for (const t of list) {
      if (t.state !== 'picked') continue;
      t.state = 'withdrawn';
      if (t.load.inFlight > 0) t.load.inFlight--;
      if (t.load.requests > 0) t.load.requests--;
      t.entry.window.add(t.epoch, -1);
      this.requests--;
      this.#onWithdrawn(t);
    }
  }
}
