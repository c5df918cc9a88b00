/**
 * Host names as routing keys, one reading for the proxy's route table and the balancing
 * clients' routes: lower case, without a trailing dot (`svc.ns.svc.` and `svc.ns.svc` are one
 * host), IPv6 literals in brackets. Validating a Host header (what may appear in one) is the
 * proxy's concern (`isValidHost`); this only normalises.
 */
import { isIP } from 'node:net';

/**
 * Lower-cases a Host value and strips its port and a trailing dot.
 *
 * @example normalizeHost('Example.com.:8080') // 'example.com'; normalizeHost('[::1]:80') // '[::1]'
 */
export function normalizeHost(host: string): string {
  let h = host;
  if (h.charCodeAt(0) === 91 /* [ */) {
    const end = h.indexOf(']');
    h = end < 0 ? h : h.slice(0, end + 1);
  } else {
    const colon = h.indexOf(':');
    if (colon >= 0) h = h.slice(0, colon);
  }
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h.toLowerCase();
}

/**
 * The `host:port` key of a host name (or IP address; IPv6 with or without brackets) and a
 * port: the host as `normalizeHost` reads it, IPv6 in brackets.
 *
 * @example hostPortKey('Svc.NS.svc.', 443) // 'svc.ns.svc:443'; hostPortKey('::1', 80) // '[::1]:80'
 */
export function hostPortKey(hostname: string, port: number): string {
  const bare = hostname.charCodeAt(0) === 91 /* [ */ ? hostname.slice(1, -1) : hostname;
  if (isIP(bare) === 6) return `[${bare.toLowerCase()}]:${port}`;
  return `${normalizeHost(bare)}:${port}`;
}
