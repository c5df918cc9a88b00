/**
 * This pod's load over a sliding window, in the unit of the configured metric, and the share
 * each open connection carries of it (same unit), from the registry's counters sampled once
 * per period: requests per second (request count differences), average requests in flight, or
 * open connections. Per-connection loads are exponentially weighted over the window, enough to
 * order connections heaviest first.
 */
import type { FairShareLoadMetric } from './fair-share-options.js';

/** The counters the meter reads from the server. */
export interface MeteredConnection {
  readonly requests: number;
  readonly inFlight: number;
}

interface Sample {
  readonly atMs: number;
  readonly requests: number;
  readonly inFlight: number;
}

interface PerConnection {
  lastRequests: number;
  lastAtMs: number;
  load: number;
}

export class LoadMeter {
  readonly #metric: FairShareLoadMetric;
  readonly #windowMs: number;
  readonly #samples: Sample[] = [];
  readonly #perConnection = new WeakMap<MeteredConnection, PerConnection>();

  constructor(metric: FairShareLoadMetric, windowMs: number) {
    this.#metric = metric;
    this.#windowMs = windowMs;
  }

  /** Records the server's totals at `nowMs` (once per period). */
  sample(nowMs: number, requestsTotal: number, inFlight: number): void {
    this.#samples.push({ atMs: nowMs, requests: requestsTotal, inFlight });
    // Keep one sample at or before the window's start.
    while (this.#samples.length > 2 && (this.#samples[1] as Sample).atMs <= nowMs - this.#windowMs) {
      this.#samples.shift();
    }
  }

  /** Own load now, given the current totals (between samples too, for the load exchange). */
  load(nowMs: number, requestsTotal: number, inFlight: number, openConnections: number): number {
    switch (this.#metric) {
      case 'connections':
        return openConnections;
      case 'in-flight': {
        let sum = inFlight;
        for (const s of this.#samples) sum += s.inFlight;
        return sum / (this.#samples.length + 1);
      }
      case 'requests-per-second': {
        const first = this.#samples[0];
        if (first === undefined || nowMs <= first.atMs) return 0;
        return ((requestsTotal - first.requests) * 1000) / (nowMs - first.atMs);
      }
    }
  }

  /** The load `connection` carries, updated from its counters at `nowMs` (call once per period). */
  connectionLoad(connection: MeteredConnection, nowMs: number): number {
    if (this.#metric === 'connections') return 1;
    let p = this.#perConnection.get(connection);
    if (p === undefined) {
      p = {
        lastRequests: connection.requests,
        lastAtMs: nowMs,
        load: this.#metric === 'in-flight' ? connection.inFlight : 0,
      };
      this.#perConnection.set(connection, p);
      // First sight: no interval yet; its requests so far are its only evidence.
      return p.load;
    }
    // A connection object reused for a new connection (the simulator pools them) starts over.
    if (connection.requests < p.lastRequests) {
      p.lastRequests = connection.requests;
      p.lastAtMs = nowMs;
      p.load = 0;
      return 0;
    }
    const dt = nowMs - p.lastAtMs;
    if (dt <= 0) return p.load;
    const alpha = Math.min(1, dt / this.#windowMs);
    const instant =
      this.#metric === 'in-flight' ? connection.inFlight : ((connection.requests - p.lastRequests) * 1000) / dt;
    p.load = alpha * instant + (1 - alpha) * p.load;
    p.lastRequests = connection.requests;
    p.lastAtMs = nowMs;
    return p.load;
  }
}
