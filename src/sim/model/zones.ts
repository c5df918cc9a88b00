/**
 * Zones for pods and clients. Zone z is named `zone-a`, `zone-b`, ... The pods a scenario
 * starts with fill `pods.zones` in creation order (`[4, 4, 3]`: four in zone-a, four in
 * zone-b, three in zone-c); a pod added later (a scale-out, a rollout's new pod) goes to the
 * zone with the fewest pods not yet gone, as a topology spread constraint would place it.
 * Clients are interleaved over the zones in proportion to `clients.zones` (smooth weighted
 * round robin, deterministic), evenly when no weights are given.
 */
import type { Scenario } from '../scenario/scenario-spec.js';

/** `zone-a` for 0, `zone-b` for 1, ... */
export function zoneName(zone: number): string {
  return zone < 26 ? `zone-${String.fromCharCode(97 + zone)}` : `zone-${zone}`;
}

/** Zones in the scenario (0 = none). */
export function zoneCount(s: Scenario): number {
  return (s.pods.zones ?? []).length;
}

/** The zone of the `index`-th initial pod, or -1 without zones. */
export function initialPodZone(s: Scenario, index: number): number {
  const zones = s.pods.zones ?? [];
  let left = index;
  for (let z = 0; z < zones.length; z++) {
    if (left < (zones[z] as number)) return z;
    left -= zones[z] as number;
  }
  return -1;
}

/** The zone with the fewest live pods (ties: the first), or -1 without zones. */
export function leastPopulatedZone(zones: number, podZones: Iterable<number>): number {
  if (zones === 0) return -1;
  const counts = new Array<number>(zones).fill(0);
  for (const z of podZones) if (z >= 0) counts[z] = (counts[z] as number) + 1;
  let best = 0;
  for (let z = 1; z < zones; z++) if ((counts[z] as number) < (counts[best] as number)) best = z;
  return best;
}

/** The zone of each of `count` clients (empty without zones). */
export function clientZones(s: Scenario, count: number): number[] {
  const zones = zoneCount(s);
  if (zones === 0) return [];
  const given = s.clients.zones ?? [];
  const weights = given.length === zones ? given : new Array<number>(zones).fill(1);
  const total = weights.reduce((a, b) => a + b, 0);
  const current = new Array<number>(zones).fill(0);
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    let best = -1;
    for (let z = 0; z < zones; z++) {
      current[z] = (current[z] as number) + (weights[z] as number);
      if (best < 0 || (current[z] as number) > (current[best] as number)) best = z;
    }
    current[best] = (current[best] as number) - total;
    out.push(best);
  }
  return out;
}
