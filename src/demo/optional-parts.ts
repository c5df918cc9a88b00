/**
 * The parts of evenlb the demo exercises, loaded through the package's public entry points
 * (`evenlb`, `evenlb/server`) exactly as a user would import them. Each loader returns
 * `undefined` when its part is not in this build, and the phase that needs it reports
 * "skipped: <part> not available" instead of inventing a result.
 */
import type { Dispatcher } from 'undici';
import type { Random } from '../core/random.js';
import type { EndpointSource } from '../discovery/endpoint-source.js';
import type { KubeProxyNamespaceLike, NetfilterApi } from './netfilter-dataplane.js';

/** What the demo needs of `BalancedAgent`: an undici Dispatcher. */
export type DemoAgent = Dispatcher;

export interface DemoAgentOptions {
  routes: Record<string, string | EndpointSource>;
  featureGates?: string;
  /** Seeded randomness for the agent's picks (and, in legacy mode, its dial-time picks). */
  random?: Random;
}

export type AgentFactory = (options: DemoAgentOptions) => DemoAgent;

export type Recycler = (
  server: import('node:http').Server,
  options: { maxRequestsPerConnection?: number; maxConnectionAgeMs?: number; graceMs?: number },
) => unknown;

// Non-literal specifiers keep the bundler from inlining: these resolve at run time through the
// package's own `exports` (self-reference), so the demo runs against the built library.
const MAIN_ENTRY = ['evenlb'].join('');
const SERVER_ENTRY = ['evenlb', 'server'].join('/');

async function importOptional(specifier: string): Promise<Record<string, unknown> | undefined> {
  try {
    return (await import(specifier)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** `BalancedAgent` from `evenlb`, or undefined when this build has none. */
export async function loadAgentFactory(): Promise<AgentFactory | undefined> {
  const mod = await importOptional(MAIN_ENTRY);
  const ctor = mod?.BalancedAgent;
  if (typeof ctor !== 'function') return undefined;
  const Agent = ctor as new (options: DemoAgentOptions) => DemoAgent;
  return (options) => new Agent(options);
}

/** `recycleConnections` from `evenlb/server`, or undefined when this build has none. */
export async function loadRecycler(): Promise<Recycler | undefined> {
  const mod = await importOptional(SERVER_ENTRY);
  const fn = mod?.recycleConnections;
  return typeof fn === 'function' ? (fn as Recycler) : undefined;
}

/** Reads `netfilterSupport()`'s answer, whatever its shape: undefined = supported, else what is missing. */
function supportVerdict(answer: unknown): string | undefined {
  if (answer === true || answer === undefined || answer === null) return undefined;
  if (answer === false) return 'not supported on this machine';
  if (typeof answer === 'string') return answer;
  if (typeof answer === 'object') {
    const a = answer as Record<string, unknown>;
    const yes = a.ok ?? a.supported ?? a.available;
    if (yes === true) return undefined;
    const why = a.reason ?? a.message ?? a.missing;
    if (typeof why === 'string') return why;
    if (Array.isArray(why)) return why.join('; ');
    return 'not supported on this machine';
  }
  return undefined;
}

/** evenlb's `KubeProxyNamespace` and `netfilterSupport()`, or undefined when this build has none. */
export async function loadNetfilter(): Promise<NetfilterApi | undefined> {
  const mod = await importOptional(MAIN_ENTRY);
  const ns = mod?.KubeProxyNamespace as { create?: unknown } | undefined;
  const support = mod?.netfilterSupport;
  if (typeof ns?.create !== 'function' || typeof support !== 'function') return undefined;
  const create = ns.create.bind(ns) as (options: { vip: string; port: number }) => Promise<KubeProxyNamespaceLike>;
  return {
    support: async () => supportVerdict(await (support as () => unknown)()),
    create: (options) => create(options),
  };
}
