/**
 * The catalogue of evenlb errors. Every error evenlb itself raises is an `EvenlbError` with a
 * stable `code`, so callers can branch on the code and never on the message text; errors from
 * the network or from undici (`ECONNREFUSED`, `UND_ERR_SOCKET`, TLS errors...) are passed on
 * with their own codes. Messages name the thing at fault and what was expected.
 */

/** Stable error codes, with the situation each one names. */
export const ErrorCodes = {
  /** An option passed to a component is missing, of the wrong type or unknown. */
  INVALID_OPTION: 'EVENLB_INVALID_OPTION',
  /** A target URI (`static:///`, `dns:///`, `k8s:///`, `file:///`) is malformed. */
  INVALID_TARGET: 'EVENLB_INVALID_TARGET',
  /** A feature gate string or object names an unknown gate or a non-boolean value. */
  INVALID_FEATURE_GATE: 'EVENLB_INVALID_FEATURE_GATE',
  /** A configuration file failed validation. */
  INVALID_CONFIG: 'EVENLB_INVALID_CONFIG',
  /** A listening socket could not be bound (address in use, not this machine's, privileged port). */
  LISTEN_FAILED: 'EVENLB_LISTEN_FAILED',
  /** A balancing policy name is not registered. */
  UNKNOWN_POLICY: 'EVENLB_UNKNOWN_POLICY',
  /** A route has no eligible endpoint (none known, none ready, or all ejected). */
  NO_ENDPOINTS: 'EVENLB_NO_ENDPOINTS',
  /** The Kubernetes Service behind a route does not exist. */
  SERVICE_NOT_FOUND: 'EVENLB_SERVICE_NOT_FOUND',
  /** Discovery has not produced a first endpoint set yet. */
  DISCOVERY_PENDING: 'EVENLB_DISCOVERY_PENDING',
  /** Discovery failed (API down, DNS failure, unreadable file); the last known set is kept. */
  DISCOVERY_FAILED: 'EVENLB_DISCOVERY_FAILED',
  /** Connecting to an endpoint failed (refused, reset before a byte was written, timeout). */
  CONNECT_FAILED: 'EVENLB_CONNECT_FAILED',
  /** A request or call exceeded its deadline. */
  TIMEOUT: 'EVENLB_TIMEOUT',
  /** The component was closed or destroyed. */
  CLOSED: 'EVENLB_CLOSED',
  /** An upstream broke HTTP/1.1 framing (malformed head or chunked body, unasked protocol switch). */
  UPSTREAM_PROTOCOL: 'EVENLB_UPSTREAM_PROTOCOL',
  /** An admission webhook answered with a non-2xx status or a body that is not an AdmissionReview. */
  WEBHOOK_FAILED: 'EVENLB_WEBHOOK_FAILED',
  /** Setting up a network namespace or its iptables rules failed (not root, `ip`/`iptables` missing, a command failed). */
  NETFILTER_FAILED: 'EVENLB_NETFILTER_FAILED',
  /** An optional package the chosen feature needs is not installed; the message names it and the command to install it. */
  MISSING_PACKAGE: 'EVENLB_MISSING_PACKAGE',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** An error from evenlb. `code` is stable; `details` carries structured context. */
export class EvenlbError extends Error {
  readonly code: ErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; details?: Record<string, unknown> } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'EvenlbError';
    this.code = code;
    this.details = Object.freeze({ ...(options.details ?? {}) });
  }
}

/** True when `err` is an `EvenlbError`, optionally with the given code. */
export function isEvenlbError(err: unknown, code?: ErrorCode): err is EvenlbError {
  return err instanceof EvenlbError && (code === undefined || err.code === code);
}

/** Renders any value for an error message: strings quoted, objects as JSON (shortened). */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  try {
    const json = JSON.stringify(value);
    return json.length > 80 ? `${json.slice(0, 77)}...` : json;
  } catch {
    return typeof value;
  }
}
