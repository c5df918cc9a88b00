/**
 * A simulated client process: a source of requests (open or closed loop) on a node, with an
 * address (IPVS `sh` hashes it) and its share of the scenario's long-lived connections.
 * Dataplane state that belongs to a client (its connections, idle pool, balancer) is kept by
 * the router, indexed by the client's `index`.
 */
import { hashKey } from '../../balancing/picker.js';
import { ipv4Text } from './sim-pod.js';

export class SimClient {
  readonly index: number;
  readonly node: number;
  readonly addressU32: number;
  readonly address: string;
  /** `hashKey(address)`: the affinity key hash policies see with `hashKey: client`. */
  readonly addressHash: number;
  /** Long-lived connections this client keeps open (connection-level dataplanes). */
  readonly connectionTarget: number;
  /**
   * Requests still to send (Infinity: unbounded). Initialised with a float so the field holds
   * a float in place: declared bare, it would hold a boxed number, and every decrement on the
   * request path would allocate one.
   */
  remaining = Number.POSITIVE_INFINITY;
  /** Zone index, -1 = none (see zones.ts). */
  readonly zone: number;
  /** Generation of the open-loop arrival stream (bumped to stop it). */
  arrivalGeneration = 0;

  constructor(index: number, node: number, addressU32: number, connectionTarget: number, remaining: number, zone = -1) {
    this.index = index;
    this.node = node;
    this.addressU32 = addressU32;
    this.address = ipv4Text(addressU32);
    this.addressHash = hashKey(this.address);
    this.connectionTarget = connectionTarget;
    this.remaining = remaining;
    this.zone = zone;
  }
}
