/**
 * A recycled node server as the fair-share shedder sees it: its connection registry's
 * counters and connections, its listening port, and whether it speaks TLS.
 */
import type { AddressInfo } from 'node:net';
import type { ConnectionRegistry } from '../connection-registry.js';
import type { ShedderHost } from './fair-share-shedder.js';

/** The `ShedderHost` view of `registry` (read live: the port is known once the server listens). */
export function registryShedderHost(registry: ConnectionRegistry): ShedderHost {
  return {
    get port() {
      const address = registry.server.address() as AddressInfo | string | null;
      return address !== null && typeof address === 'object' ? address.port : undefined;
    },
    tls: registry.kind !== 'http1',
    get draining() {
      return registry.draining;
    },
    get requestsTotal() {
      return registry.requestsTotal;
    },
    connections: () => registry.connections(),
  };
}
