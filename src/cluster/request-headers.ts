/**
 * Header helpers for routed requests. undici accepts headers as an object, a flat
 * `[name, value, ...]` array or an iterable of pairs; `withHost` returns headers that carry a
 * `host` header (the caller's own one is kept) without mutating the caller's headers, and
 * `ServiceAuthority` gives the `Host` a request to an endpoint keeps: the Service's.
 */
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
 * The dispatch options a request is sent to an endpoint with: `host` kept as the Service's
 * authority (never the endpoint IP) and, for TLS, the configured server name unless the
 * caller set one. The caller's options are not mutated.
 */
export function forEndpoint(
  opts: Dispatcher.DispatchOptions,
  authority: string,
  servername: string | undefined,
): Dispatcher.DispatchOptions {
  const sent = { ...opts, headers: withHost(opts.headers, authority) };
  if (servername !== undefined && (opts as { servername?: string }).servername === undefined) {
    (sent as { servername?: string }).servername = servername;
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
 * new ServiceAuthority(undefined, 'svc:80').of('http://web.prod.svc:8080') // 'web.prod.svc:8080'
 */
export class ServiceAuthority {
  readonly #configured: string | undefined;
  readonly #fallback: string;
  #lastOrigin: unknown;
  #last = '';

  constructor(configured: string | undefined, fallback: string) {
    this.#configured = configured;
    this.#fallback = fallback;
  }

  of(origin: Origin): string {
    if (origin !== this.#lastOrigin) {
      this.#lastOrigin = origin;
      this.#last = this.#configured ?? (origin === undefined ? this.#fallback : new URL(origin).host);
    }
    return this.#last;
  }
}
