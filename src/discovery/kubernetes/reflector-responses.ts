/**
 * What kube-apiserver answers a reflector, read and checked in one place: a LIST page (items,
 * resourceVersion, continue token), one watch line (an object event, a bookmark, a `410`
 * expiry, or another `ERROR` status), and the errors a failed LIST or watch becomes — each
 * naming what was followed (`description`) and, for the usual HTTP statuses, what to check.
 * Pure functions: the reflector (`resource-reflector.ts`) keeps the state; this reads bytes.
 */
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import type { ApiResult, KubeApiClient } from './kube-api-client.js';
import { describeConnection } from './kube-connection.js';
import { isExpiredStatus, isRecord, objectName, resourceVersionOf } from './kube-objects.js';
import type { AbortReason } from './request-attempt.js';

/** One LIST page: its items, resourceVersion and continue token (absent on the last page). */
export interface ListPage {
  readonly items: unknown[];
  readonly resourceVersion: string;
  readonly continueToken: string | undefined;
}

/** One watch line, read. `name` is undefined for an object without `metadata.name`. */
export type WatchEvent =
  | {
      readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
      readonly object: unknown;
      readonly name: string | undefined;
      readonly resourceVersion: string | undefined;
    }
  | { readonly type: 'BOOKMARK'; readonly resourceVersion: string | undefined }
  | { readonly type: 'EXPIRED' }
  | { readonly type: 'OTHER' };

/**
 * Checks one LIST page.
 *
 * @example
 * const page = readListPage(body, 'EndpointSlices of shop/web');
 * if (page.continueToken !== undefined) query.continue = page.continueToken;
 */
export function readListPage(value: unknown, description: string): ListPage {
  const rv = resourceVersionOf(value);
  if (!isRecord(value) || !Array.isArray(value.items) || rv === undefined || !isRecord(value.metadata)) {
    throw new EvenlbError(
      ErrorCodes.DISCOVERY_FAILED,
      `${description}: malformed LIST response (expected items and metadata.resourceVersion)`,
    );
  }
  const token = value.metadata.continue;
  return {
    items: value.items,
    resourceVersion: rv,
    continueToken: typeof token === 'string' && token !== '' ? token : undefined,
  };
}

/**
 * Reads one watch line. A line that is not JSON, and an `ERROR` event other than `410`
 * Expired/Gone, throw a `DISCOVERY_FAILED` error naming `description`; a shape it does not
 * know (no `type`, an unknown type) is `OTHER`, ignored by the reflector.
 *
 * @example
 * const event = readWatchEvent('{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}', 'slices');
 * // { type: 'BOOKMARK', resourceVersion: '7' }
 */
export function readWatchEvent(line: string, description: string): WatchEvent {
  let event: unknown;
  try {
    event = JSON.parse(line);
  } catch (err) {
    throw new EvenlbError(ErrorCodes.DISCOVERY_FAILED, `${description}: malformed watch event`, { cause: err });
  }
  if (!isRecord(event) || typeof event.type !== 'string') return { type: 'OTHER' };
  const object = event.object;
  switch (event.type) {
    case 'ADDED':
    case 'MODIFIED':
    case 'DELETED':
      return { type: event.type, object, name: objectName(object), resourceVersion: resourceVersionOf(object) };
    case 'BOOKMARK':
      return { type: 'BOOKMARK', resourceVersion: resourceVersionOf(object) };
    case 'ERROR': {
      if (isExpiredStatus(object)) return { type: 'EXPIRED' };
      const status = isRecord(object) ? object : {};
      throw new EvenlbError(
        ErrorCodes.DISCOVERY_FAILED,
        `${description}: watch error ${String(status.code ?? '')} ${String(status.reason ?? '')}: ${String(status.message ?? '')}`.trim(),
        { details: { statusCode: status.code, reason: status.reason } },
      );
    }
    default:
      return { type: 'OTHER' };
  }
}

/** Where a reflector's requests go and what they follow, for its error messages. */
export interface ReflectorTarget {
  readonly client: KubeApiClient;
  readonly path: string;
  readonly description: string;
  readonly requestTimeoutMs: number;
}

/**
 * The error a LIST or watch answered with a non-2xx status becomes, with a hint for 401, 403
 * and 404.
 *
 * @example
 * throw statusError(target, 'list', { type: 'status', statusCode: 403, status: undefined });
 */
export function statusError(
  target: ReflectorTarget,
  verb: 'list' | 'watch',
  result: Extract<ApiResult<unknown>, { type: 'status' }>,
): EvenlbError {
  const { statusCode, status } = result;
  let hint = '';
  if (statusCode === 401) hint = ' (the token was rejected: check the credentials)';
  else if (statusCode === 403) hint = ' (RBAC: the identity needs list and watch on it; see deploy/rbac/)';
  else if (statusCode === 404) hint = ' (the API is not served: discovery.k8s.io/v1 needs Kubernetes >= 1.21)';
  const detail = status?.message ?? status?.reason ?? '';
  return new EvenlbError(
    ErrorCodes.DISCOVERY_FAILED,
    `${target.description}: ${verb} failed with HTTP ${statusCode}${detail === '' ? '' : `: ${detail}`}${hint}`,
    { details: { verb, statusCode, reason: status?.reason, path: target.path } },
  );
}

/**
 * The error a request that got no answer becomes: a deadline, or a connection failure naming
 * the API server; an error already explained (a bad kubeconfig names its field) as it is.
 *
 * @example
 * const error = networkError(target, err, attempt.abortReason);
 */
export function networkError(target: ReflectorTarget, err: unknown, reason: AbortReason | undefined): EvenlbError {
  const server = describeConnection(target.client.connection.config);
  if (reason === 'timeout') {
    return new EvenlbError(
      ErrorCodes.DISCOVERY_FAILED,
      `${target.description}: no answer from ${server} within ${target.requestTimeoutMs} ms`,
      { cause: err },
    );
  }
  if (
    err instanceof EvenlbError &&
    (err.code === ErrorCodes.DISCOVERY_FAILED ||
      err.code === ErrorCodes.INVALID_CONFIG ||
      err.code === ErrorCodes.MISSING_PACKAGE)
  ) {
    return err;
  }
  const message = err instanceof Error ? err.message : String(err);
  const code = isRecord(err) && typeof err.code === 'string' ? ` (${err.code})` : '';
  return new EvenlbError(
    ErrorCodes.DISCOVERY_FAILED,
    `${target.description}: cannot reach ${server}: ${message}${code}`,
    {
      cause: err,
    },
  );
}
