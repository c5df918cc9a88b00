/**
 * Routes by host and path prefix. A request's host (Host header, `:authority`, or the
 * authority of an absolute-form request URI) is matched without its port: exact names first,
 * then `*.suffix` wildcards, then `*` (any host); hosts read as `normalizeHost` (src/core/host.ts)
 * reads them, the same reading as the balancing clients' routes. The longest matching path prefix wins within
 * a host. `*` never matches an absolute-form request (`GET http://other.example/ ...`): the
 * proxy serves only hosts it is configured for and is never an open forward proxy.
 */
import { normalizeHost } from '../../core/host.js';
import type { RouteConfig } from '../config/config-schema.js';

export interface RouteMatch<C> {
  readonly cluster: C;
  readonly route: RouteConfig;
}

interface Entry<C> {
  readonly prefix: string;
  readonly match: RouteMatch<C>;
}

/** Bytes a reg-name / IPv4 host may hold: unreserved, sub-delims and `%` (RFC 3986 §3.2.2). */
const REG_NAME = new Uint8Array(128);
for (const c of "-._~!$&'()*+,;=%") REG_NAME[c.charCodeAt(0)] = 1;
for (let c = 48; c <= 57; c++) REG_NAME[c] = 1;
for (let c = 65; c <= 90; c++) REG_NAME[c] = 1;
for (let c = 97; c <= 122; c++) REG_NAME[c] = 1;

/**
 * True when `host` is a `uri-host [ ":" port ]` (RFC 9110 §7.2): a non-empty reg-name or IPv4
 * address, or an IPv6 literal in brackets, then an optional port of up to 5 digits. Anything
 * else — userinfo (`a:80@b`), a path (`a/admin`), spaces, an empty host — is refused with 400
 * by every listener: the proxy must not route by one reading of a Host header and forward
 * another.
 *
 * @example isValidHost('api.example:8080') // true; isValidHost('good:80@evil') // false
 */
export function isValidHost(host: string): boolean {
  const len = host.length;
  let i = 0;
  if (len > 0 && host.charCodeAt(0) === 91 /* [ */) {
    const end = host.indexOf(']');
    if (end < 2) return false;
    for (i = 1; i < end; i++) {
      const c = host.charCodeAt(i);
      const hex = (c >= 48 && c <= 58) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102) || c === 46;
      if (!hex) return false;
    }
    i = end + 1;
  } else {
    for (; i < len; i++) {
      const c = host.charCodeAt(i);
      if (c === 58 /* : */) break;
      if (c >= 128 || REG_NAME[c] !== 1) return false;
      if (c === 37 /* % */ && !(isHex(host.charCodeAt(i + 1)) && isHex(host.charCodeAt(i + 2)))) return false;
    }
    if (i === 0) return false;
  }
  if (i === len) return true;
  if (host.charCodeAt(i) !== 58 || len - i - 1 > 5) return false;
  for (let j = i + 1; j < len; j++) {
    const c = host.charCodeAt(j);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

function isHex(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
}

/** Where a request goes: its host, its origin-form path, and whether the target was absolute-form. */
export interface RequestTarget {
  readonly host: string | undefined;
  readonly path: string;
  readonly absolute: boolean;
}

/**
 * Splits an HTTP/1.1 request target: origin-form (`/p?q`) keeps the Host header; absolute-form
 * (`http://h/p`) takes its authority as the host. Anything else (asterisk-form, a bare
 * authority, another scheme) is undefined: the proxy answers 400.
 */
export function splitRequestTarget(target: string, hostHeader: string | undefined): RequestTarget | undefined {
  if (target.charCodeAt(0) === 47 /* / */) return { host: hostHeader, path: target, absolute: false };
  const m = /^https?:\/\/([^/?#]+)([^#]*)$/i.exec(target);
  if (m === null) return undefined;
  return { host: m[1] as string, path: m[2] === '' ? '/' : (m[2] as string), absolute: true };
}

export class RouteTable<C> {
  readonly #exact = new Map<string, Entry<C>[]>();
  readonly #suffix: { suffix: string; entries: Entry<C>[] }[] = [];
  #any: Entry<C>[] | undefined;

  constructor(routes: readonly RouteConfig[], resolve: (name: string) => C) {
    const add = (list: Entry<C>[], route: RouteConfig): void => {
      list.push({ prefix: route.pathPrefix, match: Object.freeze({ cluster: resolve(route.cluster), route }) });
      list.sort((a, b) => b.prefix.length - a.prefix.length);
    };
    for (const route of routes) {
      for (const host of route.hosts) {
        if (host === '*') {
          if (this.#any === undefined) this.#any = [];
          add(this.#any, route);
        } else if (host.startsWith('*.')) {
          const suffix = host.slice(1);
          let s = this.#suffix.find((x) => x.suffix === suffix);
          if (s === undefined) {
            s = { suffix, entries: [] };
            this.#suffix.push(s);
            this.#suffix.sort((a, b) => b.suffix.length - a.suffix.length);
          }
          add(s.entries, route);
        } else {
          const key = normalizeHost(host);
          let list = this.#exact.get(key);
          if (list === undefined) {
            list = [];
            this.#exact.set(key, list);
          }
          add(list, route);
        }
      }
    }
  }

  /**
   * The route for a request, or undefined (→ 404, nothing forwarded).
   * `absoluteForm` is true when the host came from an absolute-form request target.
   */
  match(host: string | undefined, path: string, absoluteForm = false): RouteMatch<C> | undefined {
    if (host !== undefined && host !== '') {
      const h = normalizeHost(host);
      const exact = this.#exact.get(h);
      if (exact !== undefined) return byPrefix(exact, path);
      for (const s of this.#suffix) if (h.endsWith(s.suffix)) return byPrefix(s.entries, path);
    }
    if (absoluteForm || this.#any === undefined) return undefined;
    return byPrefix(this.#any, path);
  }
}

function byPrefix<C>(entries: readonly Entry<C>[], path: string): RouteMatch<C> | undefined {
  for (const e of entries) if (path.startsWith(e.prefix)) return e.match;
  return undefined;
}
