/**
 * The `fairShare` option of `recycleConnections` (and of the proxy's `listeners[].recycle`):
 * the shared decision options plus what a server needs to find and ask its peers — the target
 * URI of its own Service (any evenlb endpoint source), its own address, where the load
 * exchange is served, the peer timeout and a logger for warnings.
 */

import {
  type FairShareDecisionOptions,
  fairShareDecisionSpec,
  type ResolvedFairShareDecision,
  resolveFairShareDecision,
} from '../../balancing/fair-share/fair-share-options.js';
import { DEFAULT_LOAD_PATH } from '../../balancing/load-document.js';
import { type Input, opt, type Parsed } from '../../core/options.js';
import type { EndpointSourceOptions } from '../../discovery/create-endpoint-source.js';
import type { EndpointSource } from '../../discovery/endpoint-source.js';

/** The path every pod serves its load on (HTTP GET, JSON), unless `loadPath` says otherwise. */
export { DEFAULT_LOAD_PATH };

/** Warnings go here: pino-compatible `warn`. */
export interface FairShareLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** True for a pino-compatible logger (an object with `warn`). */
export const isLogger = (v: unknown): v is FairShareLogger =>
  typeof v === 'object' && v !== null && typeof (v as FairShareLogger).warn === 'function';
const isSource = (v: unknown): v is EndpointSource =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as EndpointSource).snapshot === 'function' &&
  typeof (v as EndpointSource).subscribe === 'function';
const isPlainObject = (v: unknown): v is EndpointSourceOptions =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export const fairShareSpec = {
  ...fairShareDecisionSpec,
  /**
   * The Service's endpoints, as a target URI (`k8s:///svc.ns:port`, `file:///…`, `static:///…`)
   * or an `EndpointSource` the caller owns. Every eligible endpoint but this pod is a peer.
   */
  peers: opt.custom<string | EndpointSource, Record<string, never>>(
    'a target URI (k8s:///, file:///, static:///, dns:///) or an EndpointSource',
    (v): v is string | EndpointSource => (typeof v === 'string' && v.length > 0) || isSource(v),
  ),
  /** Options for the endpoint source built from `peers` (`{ kubernetes: {...} }`, `{ file: {...} }`). */
  discovery: opt.custom('an object of endpoint source options', isPlainObject, { optional: true }),
  /**
   * This pod's address as its endpoints list it (its pod IP). Default: the `POD_IP` environment
   * variable, else every address of this host's network interfaces; with several servers on
   * one host, also the server's listening port tells them apart.
   */
  self: opt.string({ nonEmpty: true, optional: true }),
  /**
   * Serve the load exchange on its own port (plain HTTP, all interfaces) and ask peers on that
   * port. Unset: the server itself answers `loadPath` (HTTP/1.x servers only; HTTP/2 servers
   * need `loadPort`).
   */
  loadPort: opt.int({ min: 1, max: 65535, optional: true }),
  /** Address the `loadPort` server binds; default all interfaces. */
  loadHost: opt.string({ nonEmpty: true, optional: true }),
  /** The path the load exchange is served and asked on; default `DEFAULT_LOAD_PATH`. */
  loadPath: opt.string({ nonEmpty: true, default: DEFAULT_LOAD_PATH }),
  /** A peer that has not answered within this long counts as not answering. Default 500 ms. */
  peerTimeoutMs: opt.number({ min: 1, default: 500 }),
  /** Where warnings go (pino-compatible `warn`); default none. */
  logger: opt.custom('a logger with warn(fields, message)', isLogger, { optional: true }),
};

export type ParsedFairShareOptions = Parsed<typeof fairShareSpec>;

/** The parsed options with the decision defaults resolved. */
export interface FairShareSettings {
  readonly options: ParsedFairShareOptions;
  readonly decision: ResolvedFairShareDecision;
}

/** What `fairShare` accepts, derived from `fairShareSpec` (each field's TSDoc is on its spec entry). */
export interface FairShareOptions extends Readonly<Input<typeof fairShareSpec>> {}

/** Splits parsed options into the decision part (shared with the simulator) and the rest. */
export function fairShareSettings(options: ParsedFairShareOptions): FairShareSettings {
  const decision = resolveFairShareDecision(
    Object.fromEntries(
      Object.keys(fairShareDecisionSpec).map((k) => [k, options[k as keyof ParsedFairShareOptions]]),
    ) as FairShareDecisionOptions,
  );
  return Object.freeze({ options, decision });
}
