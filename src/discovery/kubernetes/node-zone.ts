/**
 * The caller's zone from Kubernetes: the `topology.kubernetes.io/zone` label of the node the
 * process runs on, found through the `NODE_NAME` environment variable (set it from the Downward
 * API: `valueFrom.fieldRef.fieldPath: spec.nodeName`). The service account needs `get` on
 * `nodes`. `EVENLB_ZONE`, when set, takes precedence and no lookup is made.
 */
import type { KubeApiClient } from './kube-api-client.js';
import { isRecord } from './kube-objects.js';

/** The well-known node label holding a node's zone. */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';

/** What the environment says: `{ zone }` from `EVENLB_ZONE`, `{ nodeName }` to look up, or neither. */
export function callerZoneHint(env: Readonly<Record<string, string | undefined>>): {
  zone?: string;
  nodeName?: string;
} {
  const zone = env.EVENLB_ZONE;
  if (zone !== undefined && zone !== '') return { zone };
  const nodeName = env.NODE_NAME;
  return nodeName !== undefined && nodeName !== '' ? { nodeName } : {};
}

/**
 * The zone label of node `nodeName`; undefined when the node has none. Throws an `Error`
 * naming the node and the HTTP status when the API server refuses or does not know it.
 *
 * @example
 * await lookupNodeZone(client, 'node-a', AbortSignal.timeout(10_000)) // → 'eu-west-1a'
 */
export async function lookupNodeZone(
  client: KubeApiClient,
  nodeName: string,
  signal: AbortSignal,
): Promise<string | undefined> {
  const res = await client.get(`/api/v1/nodes/${encodeURIComponent(nodeName)}`, {}, signal);
  if (res.type !== 'ok') {
    const why = res.status?.message ?? `HTTP ${res.statusCode}`;
    throw new Error(`cannot read node ${nodeName} for its ${ZONE_LABEL} label: ${why}`);
  }
  const node = res.value;
  const labels = isRecord(node) && isRecord(node.metadata) ? node.metadata.labels : undefined;
  const zone = isRecord(labels) ? labels[ZONE_LABEL] : undefined;
  return typeof zone === 'string' && zone !== '' ? zone : undefined;
}
