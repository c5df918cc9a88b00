/**
 * Listening addresses as the configuration spells them (`host:port`, IPv6 in brackets) and the
 * two questions the validator asks of them before anything binds: would two of them bind the
 * same socket (`addressesOverlap`: the same port on the same host, or a wildcard host covering
 * the other — `0.0.0.0` every IPv4 address, `::` every address, since Node binds it
 * dual-stack), and can this machine bind the host at all (`localBindProblem`: an IP literal
 * must be a wildcard, a loopback address or an address of one of its interfaces, unless the
 * kernel allows non-local binds). Host names are compared as written; the kernel decides the rest.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

export interface ListenAddress {
  /** Host without brackets, lower-cased. */
  readonly host: string;
  readonly port: number;
}

/**
 * Splits `host:port` (IPv6 as `[::1]:port`) from a validated address.
 *
 * @example
 * parseAddress('[::1]:8080'); // { host: '::1', port: 8080 }
 */
export function parseAddress(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(address.slice(colon + 1)) };
}

const V4_ANY = '0.0.0.0';

function isV6Any(host: string): boolean {
  return isIP(host) === 6 && /^[0:]+$/.test(host);
}

/** True when a socket bound at `a` keeps one at `b` from binding (port 0 never collides). */
export function addressesOverlap(a: ListenAddress, b: ListenAddress): boolean {
  if (a.port === 0 || b.port === 0 || a.port !== b.port) return false;
  if (a.host === b.host) return true;
  const covers = (wide: string, other: string): boolean => isV6Any(wide) || (wide === V4_ANY && isIP(other) !== 6);
  return covers(a.host, b.host) || covers(b.host, a.host);
}

function nonLocalBindAllowed(family: 4 | 6): boolean {
  try {
    return readFileSync(`/proc/sys/net/ipv${family}/ip_nonlocal_bind`, 'utf8').trim() === '1';
  } catch {
    return false;
  }
}

/**
 * Why this machine cannot bind `host`, or undefined when it can (or when only the kernel can
 * tell: a host name). `interfaces` defaults to the machine's own.
 *
 * @example
 * localBindProblem('10.255.0.9'); // 'is not an address of this machine (…)' on most machines
 */
export function localBindProblem(
  host: string,
  interfaces: ReturnType<typeof networkInterfaces> = networkInterfaces(),
): string | undefined {
  const family = isIP(host);
  if (family === 0 || host === V4_ANY || isV6Any(host)) return undefined;
  if (family === 4 && host.startsWith('127.')) return undefined;
  const own = Object.values(interfaces)
    .flatMap((list) => list ?? [])
    .map((i) => i.address.toLowerCase());
  if (own.includes(host.toLowerCase())) return undefined;
  if (nonLocalBindAllowed(family as 4 | 6)) return undefined;
  return `must be an address of this machine to bind (0.0.0.0, [::], loopback, or one of ${own.join(', ')})`;
}
