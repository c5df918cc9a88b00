/**
 * `dns:///host:port`: endpoints from A/AAAA records, re-resolved every `refreshIntervalMs`
 * (a headless Service's name resolves to its ready Pods). Two ways to ask:
 *
 * - `mode: 'resolve'` (default): real DNS queries with `node:dns` `Resolver.resolve4/resolve6`,
 *   optionally against `servers`; every record becomes an endpoint.
 * - `mode: 'lookup'`: the system resolver (`dns.lookup` with `all: true`), which also reads
 *   `/etc/hosts` (so `localhost` works).
 *
 * Decisions: a name that does not exist (NXDOMAIN, `ENOTFOUND`) is `not-found` only while it has
 * never resolved; after a good answer every failure, NXDOMAIN included, keeps the last set and
 * turns the status `degraded` (DNS blips must not empty a Service). A name that exists without
 * addresses (`ENODATA` for both families) is an empty set, status `ok`. Late answers are
 * dropped by a generation check.
 *
 * @example
 * const source = new DnsEndpointSource({ host: 'webhook.policy.svc.cluster.local', port: 8443 });
 */
import { lookup, Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { type Clock, isClock, systemClock, type TimerHandle } from '../core/clock.js';
import type { EndpointInput } from '../core/endpoint.js';
import { EndpointSet } from '../core/endpoint-set.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { opt, type Parsed, parseOptions } from '../core/options.js';
import { type DiscoveryLogger, discoveryLogger, isDiscoveryLogger } from './discovery-logger.js';
import { BaseEndpointSource } from './endpoint-source.js';

const dnsSourceSpec = {
  host: opt.string({ nonEmpty: true }),
  port: opt.int({ min: 1, max: 65535 }),
  /** Re-resolve interval (ms); default 30 s. */
  refreshIntervalMs: opt.number({ min: 10, default: 30_000 }),
  /** `resolve` (DNS queries, A and AAAA) or `lookup` (system resolver, /etc/hosts); default `resolve`. */
  mode: opt.oneOf(['resolve', 'lookup'] as const, { default: 'resolve' }),
  /** Address families to use: `any`, `ipv4` or `ipv6`; default `any`. */
  family: opt.oneOf(['any', 'ipv4', 'ipv6'] as const, { default: 'any' }),
  /** DNS servers for `resolve` mode (`ip` or `ip:port`); default the system's. */
  servers: opt.custom<readonly string[], { optional: true }>(
    'an array of server addresses',
    (v): v is readonly string[] => Array.isArray(v) && v.every((s) => typeof s === 'string'),
    { optional: true },
  ),
  /** Per-query timeout (ms) in `resolve` mode; default 5000. */
  timeoutMs: opt.int({ min: 1, default: 5_000 }),
  clock: opt.custom<Clock, { optional: true }>('a Clock', isClock, { optional: true }),
  logger: opt.custom<DiscoveryLogger, { optional: true }>('a logger with warn() and info()', isDiscoveryLogger, {
    optional: true,
  }),
};

export interface DnsEndpointSourceOptions {
  host: string;
  port: number;
  refreshIntervalMs?: number;
  mode?: 'resolve' | 'lookup';
  family?: 'any' | 'ipv4' | 'ipv6';
  servers?: readonly string[];
  timeoutMs?: number;
  clock?: Clock | undefined;
  logger?: DiscoveryLogger;
}

type Answer =
  | { readonly type: 'addresses'; readonly addresses: readonly string[] }
  | { readonly type: 'nxdomain'; readonly error: Error }
  | { readonly type: 'failed'; readonly error: Error };

export class DnsEndpointSource extends BaseEndpointSource {
  readonly host: string;
  readonly port: number;
  readonly #o: Parsed<typeof dnsSourceSpec>;
  readonly #clock: Clock;
  readonly #resolver: Resolver | undefined;
  #timer: TimerHandle | undefined;
  #generation = 0;
  #resolvedOnce = false;

  constructor(input: DnsEndpointSourceOptions) {
    const o = parseOptions('dns endpoint source', input, dnsSourceSpec);
    super(`dns:///${isIP(o.host) === 6 ? `[${o.host}]` : o.host}:${o.port}`);
    this.#o = o;
    this.host = o.host;
    this.port = o.port;
    this.#clock = o.clock ?? systemClock;
    if (o.mode === 'resolve' && isIP(o.host) === 0) {
      this.#resolver = new Resolver({ timeout: o.timeoutMs, tries: 2 });
      if (o.servers !== undefined) this.#resolver.setServers([...o.servers]);
    }
    void this.refresh();
  }

  /** Resolves now and reschedules the next refresh. */
  async refresh(): Promise<void> {
    const generation = ++this.#generation;
    this.#timer?.cancel();
    const answer = await this.#ask();
    if (generation !== this.#generation || this.closed) return;
    this.#apply(answer);
    this.#timer = this.#clock.setTimeout(() => void this.refresh(), this.#o.refreshIntervalMs);
  }

  protected onClose(): void {
    this.#generation++;
    this.#timer?.cancel();
    this.#resolver?.cancel();
  }

  #apply(answer: Answer): void {
    if (answer.type === 'addresses') {
      this.#resolvedOnce = true;
      const inputs: EndpointInput[] = answer.addresses.map((address) => ({ address, port: this.port }));
      this.publishEndpoints(EndpointSet.from(inputs));
      return;
    }
    const error = new EvenlbError(
      answer.type === 'nxdomain' ? ErrorCodes.SERVICE_NOT_FOUND : ErrorCodes.DISCOVERY_FAILED,
      `dns ${this.host}: ${answer.type === 'nxdomain' ? 'name does not exist' : answer.error.message}`,
      { cause: answer.error, details: { host: this.host } },
    );
    if (answer.type === 'nxdomain' && !this.#resolvedOnce) {
      this.publishNotFound(error);
      return;
    }
    (this.#o.logger ?? discoveryLogger()).warn(
      { host: this.host, kept: this.snapshot().endpoints.size, err: error.message },
      'DNS resolution failed; keeping the last known endpoints',
    );
    this.publishFailure(error);
  }

  async #ask(): Promise<Answer> {
    const { family } = this.#o;
    const ipFamily = isIP(this.host);
    if (ipFamily !== 0) return { type: 'addresses', addresses: [this.host] };
    if (this.#resolver === undefined) {
      try {
        const all = await lookup(this.host, {
          all: true,
          family: family === 'ipv4' ? 4 : family === 'ipv6' ? 6 : 0,
        });
        return { type: 'addresses', addresses: unique(all.map((a) => a.address)) };
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        return code === 'ENOTFOUND'
          ? { type: 'nxdomain', error: err as Error }
          : { type: 'failed', error: err as Error };
      }
    }
    const resolver = this.#resolver;
    const queries: Promise<string[]>[] = [];
    if (family !== 'ipv6') queries.push(resolver.resolve4(this.host));
    if (family !== 'ipv4') queries.push(resolver.resolve6(this.host));
    const results = await Promise.allSettled(queries);
    const addresses: string[] = [];
    const errors: NodeJS.ErrnoException[] = [];
    for (const r of results) {
      if (r.status === 'fulfilled') addresses.push(...r.value);
      else errors.push(r.reason as NodeJS.ErrnoException);
    }
    if (addresses.length > 0) return { type: 'addresses', addresses: unique(addresses) };
    const hard = errors.find((e) => e.code !== 'ENODATA' && e.code !== 'ENOTFOUND');
    if (hard !== undefined) return { type: 'failed', error: hard };
    const nx = errors.find((e) => e.code === 'ENOTFOUND');
    if (nx !== undefined) return { type: 'nxdomain', error: nx };
    return { type: 'addresses', addresses: [] };
  }
}

function unique(list: readonly string[]): string[] {
  return [...new Set(list)];
}
