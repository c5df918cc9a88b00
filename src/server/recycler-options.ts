/**
 * Options of `recycleConnections`, declared once. The lifetime fields are the shared
 * `lifetimeOptionsSpec` (the same rules the client pools apply); the rest are the server's own:
 * how long a retiring connection may take to finish before it is destroyed, how long a
 * retiring HTTP/1 connection must have been idle before it is closed without a response to
 * carry `Connection: close`, and the injected clock, randomness and metrics registry.
 */
import type { Registry } from 'prom-client';
import { type Clock, isClock, systemClock } from '../core/clock.js';
import { type Input, opt, type Parsed, parseOptions } from '../core/options.js';
import { createRandom, type Random } from '../core/random.js';
import { LifetimePolicy, lifetimeOptionsSpec } from '../pool/lifetime-policy.js';
import { type FairShareSettings, fairShareSettings, fairShareSpec } from './fair-share/fair-share-options.js';

const COMPONENT = 'recycleConnections';

const isRandom = (v: unknown): v is Random =>
  typeof v === 'object' && v !== null && typeof (v as Random).next === 'function';

/** A prom-client `Registry` (by its shape: prom-client is loaded only once metrics are asked for). */
const isRegistry = (v: unknown): v is Registry =>
  typeof v === 'object' && v !== null && typeof (v as Registry).getSingleMetric === 'function';

export const recyclerOptionsSpec = {
  ...lifetimeOptionsSpec,
  /**
   * After a connection starts retiring (limit reached), how long its in-flight requests may
   * take before the connection is destroyed; unset = wait for them however long they take.
   */
  graceMs: opt.number({ min: 0, optional: true }),
  /**
   * HTTP/1 has no race-free way to close an idle keep-alive connection: the client may be
   * writing a request at that moment. With an age limit, responses announce a
   * `Keep-Alive: timeout` within the connection's time left (so clients honouring it drop the
   * idle socket first) and the last second closes with `Connection: close`; a retiring
   * connection that is idle anyway (a client ignoring `Keep-Alive`, or draining) is closed only
   * once it has been idle this long; if a request comes first, its response carries
   * `Connection: close`. Default 250 ms. HTTP/2 uses GOAWAY instead.
   */
  idleCloseDelayMs: opt.number({ min: 0, default: 250 }),
  /** Time source for ages, grace and idle timers; default the system clock (tests pass a `ManualClock`). */
  clock: opt.custom('a Clock (an object with now() and setTimeout())', isClock, { default: systemClock }),
  /** Randomness for age jitter and shedding; default an unseeded `Random`. */
  random: opt.custom('a Random (an object with next())', isRandom, { optional: true }),
  /** Record `evenlb_server_*` metrics on this prom-client registry. */
  metrics: opt.object({ registry: opt.custom('a prom-client Registry', isRegistry) }, { optional: true }),
  /**
   * Fair-share shedding: close connections only while this server's load is above the fleet
   * mean by more than a tolerance, learning the fleet's load from its peers. The age and
   * request limits above keep working beside it, as a ceiling.
   */
  fairShare: opt.object(fairShareSpec, { optional: true }),
};

/** What `recycleConnections` accepts, derived from `recyclerOptionsSpec` (each field's TSDoc is on its spec entry). */
export interface RecyclerOptions extends Readonly<Input<typeof recyclerOptionsSpec>> {}

export type ParsedRecyclerOptions = Parsed<typeof recyclerOptionsSpec>;

/** The parsed options plus the lifetime policy built from them. */
export interface RecyclerSettings {
  readonly options: ParsedRecyclerOptions;
  readonly policy: LifetimePolicy;
  readonly clock: Clock;
  /** Fair-share shedding, when configured. */
  readonly fairShare: FairShareSettings | undefined;
  /** The randomness the policy and shedding draw from. */
  readonly random: Random;
}

/**
 * Validates `input` once and builds the settings a registry applies.
 *
 * @example
 * parseRecyclerOptions({ maxRequestsPerConnection: 100, maxConnectionAgeMs: 60_000 });
 */
export function parseRecyclerOptions(input: unknown): RecyclerSettings {
  const options = parseOptions(COMPONENT, input, recyclerOptionsSpec);
  const lifetime = {
    maxRequestsPerConnection: options.maxRequestsPerConnection,
    maxConnectionAgeMs: options.maxConnectionAgeMs,
    ageJitter: options.ageJitter,
    idleTimeoutMs: options.idleTimeoutMs,
  };
  const random = options.random ?? createRandom();
  const policy = new LifetimePolicy(lifetime, random, COMPONENT);
  const fairShare = options.fairShare === undefined ? undefined : fairShareSettings(options.fairShare);
  return Object.freeze({ options, policy, clock: options.clock, fairShare, random });
}

/** Settings with no limit: connections are only tracked (for drain and stats). */
export function trackingOnlySettings(clock: Clock = systemClock): RecyclerSettings {
  return parseRecyclerOptions({ clock });
}
