/**
 * The errors a cluster fails requests with when nothing can be picked: no endpoint (with why),
 * Service not found, discovery still pending, cluster closed. One place, so the undici path,
 * the node:http agent and the proxy report the same situation with the same code and words.
 */
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import type { EndpointSource } from '../discovery/endpoint-source.js';

/** `EVENLB_SERVICE_NOT_FOUND` or `EVENLB_NO_ENDPOINTS` for a picker's `none` reason. */
export function noEndpointError(route: string, source: EndpointSource, reason: string): EvenlbError {
  const status = source.snapshot().status;
  if (status.state === 'not-found') {
    return new EvenlbError(ErrorCodes.SERVICE_NOT_FOUND, `route ${route}: ${status.error.message}`, {
      cause: status.error,
      details: { route, target: source.target },
    });
  }
  const why =
    reason === 'none-ready'
      ? 'no endpoint is ready'
      : reason === 'all-ejected'
        ? 'every endpoint is ejected by outlier detection'
        : 'discovery knows no endpoint';
  return new EvenlbError(ErrorCodes.NO_ENDPOINTS, `route ${route} (${source.target}): ${why}`, {
    ...(status.state === 'degraded' ? { cause: status.error } : {}),
    details: { route, target: source.target, reason },
  });
}

/** `EVENLB_DISCOVERY_PENDING`: discovery gave no first answer in time. */
export function pendingError(route: string, source: EndpointSource, timeoutMs: number): EvenlbError {
  return new EvenlbError(
    ErrorCodes.DISCOVERY_PENDING,
    `route ${route} (${source.target}): discovery gave no answer within ${timeoutMs} ms`,
    { details: { route, target: source.target } },
  );
}

/** `EVENLB_CLOSED`: the cluster was closed or destroyed. */
export function closedError(route: string): EvenlbError {
  return new EvenlbError(ErrorCodes.CLOSED, `cluster ${route} is closed`);
}
