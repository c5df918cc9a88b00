/**
 * What the orchestrator and its children say to each other, and the names they share. Pods
 * report `listening`, `stats` and `stopped`; the load process reports `ready`, `started`,
 * `stats` and `stopped`; the orchestrator sends `start`, `endpoints` and `stop`.
 */
import type { EndpointInput } from '../core/endpoint.js';

/** The Service name clients address; BalancedAgent resolves it to pods. */
export const DEMO_SERVICE_HOST = 'demo.default.svc';
export const DEMO_SERVICE_PORT = 80;

/** The argument every demo child carries, followed by the run id: how stray processes are found. */
export const DEMO_MARKER_FLAG = '--evenlb-demo';

export type LoadMode =
  | { readonly kind: 'agent'; readonly roundTrip: boolean; readonly endpoints: EndpointInput[] }
  | { readonly kind: 'direct'; readonly url: string };

export interface LoadStart {
  readonly type: 'start';
  readonly clients: number;
  readonly ratePerClient: number;
  readonly seed: number;
  readonly mode: LoadMode;
}

export interface PodStats {
  readonly requests: number;
  readonly openConnections: number;
  readonly connectionsTotal: number;
}

export interface LoadStats {
  readonly ok: number;
  readonly failed: number;
  readonly errorsByCode: Readonly<Record<string, number>>;
  /** Time the clients have been sending, ms (from `start`; stops growing at `stop`). */
  readonly sendingMs?: number;
  /** Request latency quantiles as the clients saw them (headers and body), ms; in the final report only. */
  readonly latencyMs?: ClientLatencyMs;
}

/** Quantiles of the clients' request latencies, ms (undefined before the first request). */
export interface ClientLatencyMs {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}
