/**
 * How a kube-proxy mode chooses the pod for a new connection. The scheduler sees the eligible
 * endpoints (sorted by address, as kube-proxy writes its rules) and, for IPVS, the node the
 * connection comes from: IPVS keeps its scheduler state per node, so `rr` rotates and `lc`
 * counts connections separately on every node.
 */
import type { SimClient } from '../../model/sim-client.js';
import type { SimPod } from '../../model/sim-pod.js';

export interface ConnectionScheduler {
  /** The eligible endpoints changed (sorted by address). */
  update(pods: readonly SimPod[]): void;
  /** The pod for a new connection from `client`, or undefined when there is none. */
  pick(client: SimClient): SimPod | undefined;
  /** A connection from `client` to `pod` opened. */
  opened(client: SimClient, pod: SimPod): void;
  /** A connection from `client` to `pod` closed. */
  closed(client: SimClient, pod: SimPod): void;
}
