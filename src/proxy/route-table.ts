/**
 * Routes by host and path prefix. A request's host (Host header, `:authority`, or the
 * authority of an absolute-form request URI) is matched without its port: exact names first,
 * then `*.suffix` wildcards, then `*` (any host). The longest matching path prefix wins within
 * a host. `*` never matches an absolute-form request (`GET http://other.example/ ...`): the
 * proxy serves only hosts it is configured for and is never an open forward proxy.
 */
import type { RouteConfig } from './config-schema.js';

export interface RouteMatch<C> {
  readonly cluster: C;
  readonly route: RouteConfig;
}

interface Entry<C> {
  readonly prefix: string;
  readonly match: RouteMatch<C>;
}

/** Lower-cases a host and strips its port (`Example.com:8080` → `example.com`, `[::1]:80` → `[::1]`). */
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
