/**
 * Header helpers for routed requests. undici accepts headers as an object, a flat
 * `[name, value, ...]` array or an iterable of pairs; `withHost` returns headers that carry a
 * `host` header (the caller's own one is kept) without mutating the caller's headers, and
 * `ServiceAuthority` gives the `Host` a request to an endpoint keeps: the Service's.
 */
import { isIP } from 'node:net';
import type { Dispatcher } from 'undici';

type Headers = Dispatcher.DispatchOptions['headers'];

function isHost(name: unknown): boolean {
  const s = typeof name === 'string' ? name : String(name);
  return s.length === 4 && s.toLowerCase() === 'host';
}

/**
 * `headers` plus `host: authority` unless a host header is present.
 *
 * @example
 * withHost({ accept: 'text/plain' }, 'svc.ns.svc:443') // → { accept: 'text/plain', host: 'svc.ns.svc:443' }
 */
export function withHost(headers: Headers, authority: string): Headers {
  if (headers === undefined || headers === null) return ['host', authority];
  if (Array.isArray(headers)) {
    for (let i = 0; i < headers.length; i += 2) if (isHost(headers[i])) return headers;
    const out = headers.slice();
    out.push('host', authority);
    return out;
  }
  if (typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    const out: string[] = [];
    let found = false;
    for (const [name, value] of headers as Iterable<[string, string | string[] | undefined]>) {
      if (value === undefined) continue;
      if (isHost(name)) found = true;
      if (Array.isArray(value)) for (const v of value) out.push(name, v);
      else out.push(name, value);
    }
    if (!found) out.push('host', authority);
    return out;
  }
  const record = headers as Record<string, unknown>;
  for (const name in record) if (isHost(name)) return headers;
  return { ...(headers as Record<string, string | string[]>), host: authority };
}

/** The value of the `host` header in `headers`, if any. */
export function findHost(headers: Headers): string | undefined {
  if (headers === undefined || headers === null) return undefined;
  if (Array.isArray(headers)) {
    for (let i = 0; i < headers.length; i += 2) if (isHost(headers[i])) return String(headers[i + 1]);
    return undefined;
  }
  if (typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const [name, value] of headers as Iterable<[string, unknown]>) if (isHost(name)) return String(value);
    return undefined;
  }
  const record = headers as Record<string, unknown>;
  for (const name in record) if (isHost(name)) return String(record[name]);
  return undefined;
}

/**
 * The Service authority a request to an endpoint carries as `Host`, with what follows from it,
 * worked out once per authority rather than per request.
 */
export interface ServiceHost {
  /** The `Host` value (`svc.ns.svc:443`). */
  readonly authority: string;
  /** `['host', authority]`: the headers of a request that came without any (shared; never mutated). */
  readonly hostOnly: readonly string[];
  /**
   * The TLS server name undici derives from this `Host` (its host name), or undefined for an IP
   * address (which names no server). Handing it over spares undici that check on every request.
   */
  readonly serverName: string | undefined;
}

/** The host name of `host:port` (IPv6 in brackets), as undici reads it; undefined for an IP address. */
function serverNameOf(authority: string): string | undefined {
  if (authority.startsWith('[')) return undefined;
  const colon = authority.indexOf(':');
  const name = colon < 0 ? authority : authority.slice(0, colon);
  return name === '' || isIP(name) !== 0 ? undefined : name;
}

/**
 * A `ServiceHost` for `authority`.
 *
 * @example
 * serviceHost('svc.ns.svc:443') // → { authority: 'svc.ns.svc:443', hostOnly: ['host', 'svc.ns.svc:443'], serverName: 'svc.ns.svc' }
 */
export function serviceHost(authority: string): ServiceHost {
  return Object.freeze({
    authority,
    hostOnly: Object.freeze(['host', authority]),
    serverName: serverNameOf(authority),
  });
}

/**
 * The dispatch options a request is sent to an endpoint with: `host` kept as the Service's
 * authority (never the endpoint IP) and, for TLS, the configured server name unless the
 * caller set one; when the request gets the Service's `Host`, also the server name undici would
 * derive from it. The caller's options are not mutated.
 */
export function forEndpoint(
  opts: Dispatcher.DispatchOptions,
  service: ServiceHost,
  servername: string | undefined,
): Dispatcher.DispatchOptions {
  const own = opts.headers;
  const headers = own === undefined || own === null ? (service.hostOnly as string[]) : withHost(own, service.authority);
  // A plain copy, then the fields set: V8 copies `{ ...opts }` on a fast path that
  // `{ ...opts, headers }` misses (several times slower per request).
  const sent = { ...opts };
  sent.headers = headers;
  if ((opts as { servername?: string }).servername === undefined) {
    const name = servername ?? (headers === own ? undefined : service.serverName);
    if (name !== undefined) (sent as { servername?: string }).servername = name;
  }
  return sent;
}

type Origin = Dispatcher.DispatchOptions['origin'];

/** True for an `https:` origin (a string or a URL). */
export function isHttpsOrigin(origin: Origin): boolean {
  return typeof origin === 'string'
    ? origin.charCodeAt(4) === 115 /* "https:" */
    : origin !== undefined && origin.protocol === 'https:';
}

/**
 * The authority a request keeps as `Host` when it goes to an endpoint: the configured one, else
 * its origin's host, else the cluster's name. Cached for the last origin seen (a cluster's
 * requests nearly always share one).
 *
 * @example
 * new ServiceAuthority(undefined, 'svc:80').of('http://web.prod.svc:8080').authority // 'web.prod.svc:8080'
 */
export class ServiceAuthority {
  readonly #configured: ServiceHost | undefined;
  readonly #fallback: string;
  #lastOrigin: unknown;
  #last: ServiceHost | undefined;

  constructor(configured: string | undefined, fallback: string) {
    this.#configured = configured === undefined ? undefined : serviceHost(configured);
    this.#fallback = fallback;
  }

  of(origin: Origin): ServiceHost {
    if (this.#configured !== undefined) return this.#configured;
    if (this.#last === undefined || origin !== this.#lastOrigin) {
      this.#lastOrigin = origin;
      this.#last = serviceHost(origin === undefined ? this.#fallback : new URL(origin).host);
    }
    return this.#last;
  }
}
