/**
 * Endpoint-list helpers shared by the policies: weights as a typed array, the "all equal"
 * test that selects a policy's unweighted fast path, each endpoint's weight relative to the
 * mean (so load signals can be compared per unit of capacity), and a by-key order for
 * policies whose mapping must not depend on the order discovery lists endpoints in.
 */
import type { TrackedEndpoint } from '../picker.js';

/** The endpoints' effective weights (`TrackedEndpoint.weight`: slow start and zone preference applied), in order. */
export function endpointWeights(endpoints: readonly TrackedEndpoint[]): Float64Array {
  const w = new Float64Array(endpoints.length);
  for (let i = 0; i < endpoints.length; i++) w[i] = (endpoints[i] as TrackedEndpoint).weight;
  return w;
}

/** True when every endpoint has the same effective weight (the common case: weights unset, nothing ramping). */
export function weightsUniform(endpoints: readonly TrackedEndpoint[]): boolean {
  const first = endpoints[0]?.weight;
  for (const t of endpoints) if (t.weight !== first) return false;
  return true;
}

/** `mean weight / weight` per endpoint: 1 for an average endpoint, 0.5 for one twice as heavy. */
export function inverseRelativeWeights(weights: Float64Array): Float64Array {
  let total = 0;
  for (const w of weights) total += w;
  const mean = total / weights.length;
  const out = new Float64Array(weights.length);
  for (let i = 0; i < weights.length; i++) out[i] = mean / (weights[i] as number);
  return out;
}

/** A copy of `endpoints` sorted by endpoint key (code-unit order), for policies whose result must not depend on discovery order. */
export function sortedByKey(endpoints: readonly TrackedEndpoint[]): TrackedEndpoint[] {
  return [...endpoints].sort((a, b) =>
    a.endpoint.key < b.endpoint.key ? -1 : a.endpoint.key > b.endpoint.key ? 1 : 0,
  );
}
