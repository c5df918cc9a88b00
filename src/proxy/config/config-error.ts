/**
 * The one shape of a proxy configuration error: `EVENLB_INVALID_CONFIG` with a message naming
 * the field as a path into the file (`listeners[0].limits.requestTimeoutMs`), what it must be,
 * and what was received, and the field in `details.field` for callers that point at it. The
 * loader, the schema error mapping and the cross-field checks all throw through it, so every
 * rejection reads the same way.
 */
import { describeValue, ErrorCodes, EvenlbError } from '../../core/errors.js';

/**
 * An invalid-configuration error for `field`.
 *
 * @example
 * throw configError('listeners[0].address', 'must be unique', '127.0.0.1:8080');
 * // proxy config: "listeners[0].address" must be unique; received "127.0.0.1:8080"
 */
export function configError(field: string, message: string, received?: unknown): EvenlbError {
  const tail = received === undefined ? '' : `; received ${describeValue(received)}`;
  return new EvenlbError(ErrorCodes.INVALID_CONFIG, `proxy config: "${field}" ${message}${tail}`, {
    details: { field },
  });
}
