/**
 * Opens the endpoint source for a cluster's target URI. Discovery itself lives in
 * `src/discovery/`; this is the proxy's one call into it.
 */
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { parseTarget } from '../core/target.js';
import type { EndpointSource } from '../discovery/endpoint-source.js';
import { StaticEndpointSource } from '../discovery/static-endpoint-source.js';

/** An `EndpointSource` following `target`. */
export function openEndpointSource(target: string): EndpointSource {
  const t = parseTarget(target);
  if (t.scheme === 'static') return new StaticEndpointSource(t.endpoints, target);
  throw new EvenlbError(ErrorCodes.INVALID_TARGET, `target scheme ${t.scheme}:/// is not available in this build`);
}
