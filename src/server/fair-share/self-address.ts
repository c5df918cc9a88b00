/**
 * Which endpoint of the Service is this pod: its pod IP (the `self` option, else `POD_IP` — the
 * Downward API's usual name — else every address of this host's interfaces) and, where several
 * servers share a host (tests, the demo), the server's listening port.
 */
import { networkInterfaces } from 'node:os';
import type { Endpoint } from '../../core/endpoint.js';

/** The addresses this pod may appear under. */
export function selfAddresses(self: string | undefined, env: NodeJS.ProcessEnv = process.env): ReadonlySet<string> {
  if (self !== undefined) return new Set([self]);
  const podIp = env.POD_IP;
  if (podIp !== undefined && podIp !== '') return new Set([podIp]);
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) for (const i of list ?? []) out.add(i.address);
  return out;
}

/**
 * True when `endpoint` is this pod: its address is one of ours and, when the server's port is
 * known and the Service lists this address several times, the port matches.
 */
export function isSelf(endpoint: Endpoint, addresses: ReadonlySet<string>, port: number | undefined): boolean {
  if (!addresses.has(endpoint.address)) return false;
  return port === undefined || endpoint.port === port;
}
