/**
 * The parts of evenlb the demo exercises, loaded through the package's public entry points
 * (`evenlb`, `evenlb/server`) exactly as a user would import them. Each loader returns
 * `undefined` when its part is not in this build, and the phase that needs it reports
 * "skipped: <part> not available" instead of inventing a result.
 */
import type { Dispatcher } from 'undici';
import type { Random } from '../core/random.js';
import type { EndpointSource } from '../discovery/endpoint-source.js';

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
  options: { maxRequestsPerConnection?: number; maxConnectionAgeMs?: number; graceMs?: number; random?: Random },
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
