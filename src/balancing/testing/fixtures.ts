/**
 * Test fixtures shared by the balancing tests: endpoint inputs on distinct addresses, a seeded
 * balancer on a manual clock, and helpers that turn picks into endpoint keys and tallies.
 * Test-only: nothing in the package imports this folder.
 */
import { ManualClock } from '../../core/clock.js';
import type { EndpointInput } from '../../core/endpoint.js';
import { SeededRandom } from '../../core/random.js';
import { Balancer } from '../balancer.js';
import type { PickContext, Picker } from '../picker.js';

/** `n` endpoint inputs on 10.x.y.z:8443, in index order; `extra(i)` adds fields. */
export function endpointInputs(n: number, extra: (i: number) => Partial<EndpointInput> = () => ({})): EndpointInput[] {
  return Array.from({ length: n }, (_, i) => ({
    address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
    port: 8443,
    ...extra(i),
  }));
}

/** A balancer for `policy` with seeded randomness and a manual clock. */
export function seededBalancer(policy: string, seed = 1, policyOptions?: unknown): { b: Balancer; clock: ManualClock } {
  const clock = new ManualClock();
  return { b: new Balancer({ policy, policyOptions, clock, random: new SeededRandom(seed) }), clock };
}

/** The key picked, or the none reason. */
export function pickKey(picker: Picker, context?: PickContext): string {
  const r = picker.pick(context);
  return r.type === 'picked' ? r.endpoint.key : `none:${r.reason}`;
}

/** Picks `count` keys from the balancer's current picker. */
export function pickKeys(b: Balancer, count: number, context?: PickContext): string[] {
  return Array.from({ length: count }, () => pickKey(b.picker, context));
}

export function tally(keys: Iterable<string>): Map<string, number> {
  const m = new Map<string, number>();
  for (const k of keys) m.set(k, (m.get(k) ?? 0) + 1);
  return m;
}
