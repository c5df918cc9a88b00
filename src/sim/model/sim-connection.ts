/**
 * A simulated TCP connection from a client to one pod, with the counters the shared
 * `LifetimePolicy` reads (`ConnectionLife`), so client-side reconnect limits and server-side
 * recycling are decided by production code. `open` connections take new requests; a
 * `closing` one finishes what it carries and then closes; `closed` is final. `generation`
 * changes whenever the slot is reused, so stale deadline events are ignored.
 */
import type { ConnectionLife } from '../../pool/lifetime-policy.js';
import type { SimClient } from './sim-client.js';
import type { SimPod } from './sim-pod.js';

export type ConnectionState = 'open' | 'closing' | 'closed';

export class SimConnection implements ConnectionLife {
  readonly id: number;
  generation = 0;
  client!: SimClient;
  pod!: SimPod;
  state: ConnectionState = 'closed';
  openedAtMs = 0;
  /** Client-side age limit (LifetimePolicy, jittered); undefined = none. */
  maxAgeMs: number | undefined;
  /** Server-side age limit (recycler); undefined = none. */
  serverMaxAgeMs: number | undefined;
  /** When the client ends the session by itself (lifetime distribution); Infinity = never. */
  sessionEndMs = Number.POSITIVE_INFINITY;
  requests = 0;
  inFlight = 0;
  idleSinceMs = 0;

  constructor(id: number) {
    this.id = id;
  }
}
