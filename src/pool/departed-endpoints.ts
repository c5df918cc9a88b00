/**
 * The one rule for letting an endpoint's connections go, shared by every transport: an endpoint
 * has departed when it is no longer eligible by its conditions — removed from discovery, not
 * ready, or terminating while another is ready (kube-proxy's rule, `EndpointSet.eligible()`).
 * An endpoint ejected by outlier detection has not departed: it keeps its connections and may
 * come back. A departed endpoint is drained: no new work, idle connections close at once,
 * in-flight work finishes.
 */
import type { EndpointSet } from '../core/endpoint-set.js';

/** The keys of endpoints eligible by their conditions (ejection does not matter). */
export function eligibleKeys(set: EndpointSet): Set<string> {
  const out = new Set<string>();
  for (const e of set.eligible()) out.add(e.key);
  return out;
}

/** The keys among `held` (endpoints a transport has connections to) that departed. */
export function departedEndpoints(held: Iterable<string>, eligible: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const key of held) if (!eligible.has(key)) out.push(key);
  return out;
}
