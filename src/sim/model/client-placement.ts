/**
 * Where the simulated clients run: round-robin onto `clients.nodes` nodes, each with a
 * random, distinct address in its node's /16 of 10.128.0.0/9 (pod IPs are arbitrary, and IPVS
 * `sh` hashes them), each with its share of the scenario's long-lived connections and, when
 * the scenario has zones, a zone (zones.ts).
 */
import type { Random } from '../../core/random.js';
import type { Scenario } from '../scenario/scenario-spec.js';
import { SimClient } from './sim-client.js';
import { clientZones } from './zones.js';

/** Base address of clients: 10.128.0.0/9, one /16 per node. */
const CLIENT_BASE = (10 << 24) | (128 << 16);

/** The scenario's clients, in index order; draws addresses from `random`. */
export function createClients(s: Scenario, random: Random): SimClient[] {
  const c = s.clients;
  const count = c.count ?? c.connections;
  const remaining = c.arrival.count ?? Number.POSITIVE_INFINITY;
  const taken = new Set<number>();
  const clients: SimClient[] = [];
  const zones = clientZones(s, count);
  for (let i = 0; i < count; i++) {
    const node = i % c.nodes;
    let host = 2 + random.int(65_532);
    while (taken.has(node * 65536 + host)) host = host === 65_533 ? 2 : host + 1;
    taken.add(node * 65536 + host);
    const address = (CLIENT_BASE + ((node * 65536) % (1 << 23)) + host) >>> 0;
    // Connections spread as evenly as possible: the first (C mod N) clients hold one more.
    const conns = Math.floor(c.connections / count) + (i < c.connections % count ? 1 : 0);
    clients.push(new SimClient(i, node, address, conns, remaining, zones[i] ?? -1));
  }
  return clients;
}
