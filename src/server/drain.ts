/**
 * Graceful shutdown. `drain` stops accepting connections and lets every open one finish what
 * it is doing: HTTP/1 connections close after their current response (sent with
 * `Connection: close`), idle ones close once quiet, HTTP/2 sessions get GOAWAY. After `graceMs`
 * whatever is left is destroyed. `drainOnSignal` runs it on SIGTERM, which is how Kubernetes
 * stops a pod during a rolling update: no request already sent is cut, and a client whose
 * connection closes reconnects to another endpoint.
 *
 * The drain knows every connection opened after the server was first handed to
 * `recycleConnections`, `drainOnSignal` or `drain`: call one of them before `listen()`.
 */
import { type Clock, isClock, systemClock } from '../core/clock.js';
import { opt, parseOptions } from '../core/options.js';
import { ConnectionRegistry, type DrainResult } from './connection-registry.js';

const drainSpec = {
  /** Time in-flight requests get before leftovers are destroyed. Default 25 s (Kubernetes' default grace is 30 s). */
  graceMs: opt.number({ min: 0, default: 25_000 }),
  clock: opt.custom('a Clock (an object with now() and setTimeout())', isClock, { default: systemClock }),
};

const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'] as const;
type DrainSignal = (typeof SIGNALS)[number];

const isSignalList = (v: unknown): v is DrainSignal[] =>
  Array.isArray(v) && v.length > 0 && v.every((s) => (SIGNALS as readonly unknown[]).includes(s));

const signalSpec = {
  ...drainSpec,
  /** Signals that start the drain; default `['SIGTERM']`. */
  signals: opt.custom(`a non-empty array of ${SIGNALS.join(', ')}`, isSignalList, { default: ['SIGTERM'] }),
  /**
   * Keep serving normally this long after the signal before draining, while Kubernetes removes
   * the pod from the Service's endpoints (what a `preStop` sleep does). Default 0.
   */
  closeDelayMs: opt.number({ min: 0, default: 0 }),
  /** Exit the process once drained (code 0). Default true. */
  exit: opt.boolean({ default: true }),
};

export type { DrainResult };

export interface DrainOptions {
  /** Time in-flight requests get before leftovers are destroyed; default 25 000. */
  readonly graceMs?: number;
  readonly clock?: Clock;
}

export interface DrainOnSignalOptions extends DrainOptions {
  /** Signals that start the drain; default `['SIGTERM']`. A second signal destroys leftovers at once. */
  readonly signals?: readonly DrainSignal[];
  /** Keep serving this long after the signal before draining (endpoint removal propagates). */
  readonly closeDelayMs?: number;
  /** Exit the process (code 0) once drained; default true. */
  readonly exit?: boolean;
}

/** The handle `drainOnSignal` returns. */
export interface SignalDrain {
  /** Settles with the drain's result after a signal came and the drain finished. */
  readonly done: Promise<DrainResult>;
  /** Removes the signal handlers; a drain already running continues. Idempotent. */
  close(): Promise<void>;
}

/**
 * Drains `server` now: resolves once every connection closed gracefully, or after `graceMs`
 * with the leftovers destroyed. Idempotent per server.
 *
 * @example
 * const result = await drain(server, { graceMs: 10_000 });
 * if (result.destroyed > 0) log.warn(result, 'requests were cut at the end of the grace');
 */
export async function drain(server: unknown, options: DrainOptions = {}): Promise<DrainResult> {
  const o = parseOptions('drain', options, drainSpec);
  const registry = ConnectionRegistry.acquire(server, 'drain');
  try {
    return await registry.drain(o);
  } finally {
    registry.release();
  }
}

/**
 * Drains `server` when the process receives one of `signals`, then (by default) exits. Call it
 * before `listen()` so every connection is known. The Pod's `terminationGracePeriodSeconds`
 * must exceed `closeDelayMs + graceMs`.
 *
 * @example
 * const server = https.createServer({ key, cert }, handler);
 * recycleConnections(server, { maxConnectionAgeMs: 300_000 });
 * drainOnSignal(server, { graceMs: 20_000, closeDelayMs: 5_000 });
 * server.listen(8443);
 */
export function drainOnSignal(server: unknown, options: DrainOnSignalOptions = {}): SignalDrain {
  const o = parseOptions('drainOnSignal', options, signalSpec);
  const registry = ConnectionRegistry.acquire(server, 'drainOnSignal');
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    for (const s of o.signals) process.removeListener(s, onSignal);
    registry.release();
  };

  let resolveDone!: (r: DrainResult) => void;
  let rejectDone!: (e: unknown) => void;
  const done = new Promise<DrainResult>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  let started = false;

  function onSignal(): void {
    if (started) {
      registry.forceDrain();
      return;
    }
    started = true;
    const run = async (): Promise<DrainResult> => {
      if (o.closeDelayMs > 0) await new Promise<void>((r) => o.clock.setTimeout(r, o.closeDelayMs));
      return registry.drain({ graceMs: o.graceMs, clock: o.clock });
    };
    run().then(
      (result) => {
        resolveDone(result);
        release();
        // Let `done` callbacks (logging) run first.
        if (o.exit) setImmediate(() => process.exit(0));
      },
      (err: unknown) => {
        rejectDone(err);
        release();
        if (o.exit) setImmediate(() => process.exit(1));
      },
    );
  }

  for (const s of o.signals) process.on(s, onSignal);
  return Object.freeze({
    done,
    close: async () => {
      if (!started) release();
    },
  });
}
