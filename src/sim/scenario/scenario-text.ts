/**
 * Words for a validated scenario: durations, distributions, pod and client counts, pod names,
 * what makes pods unequal, the fleet's capacity and the pods' average utilisation, as the built-in scenarios' descriptions and the report's
 * settings lines use them. Everything is computed from the final spec (knobs applied), so a
 * description never repeats a number the run did not use.
 */
import type { DistributionSpec } from '../workload/distribution.js';
import { meanSpeed } from '../workload/speed-distribution.js';
import type { Scenario } from './scenario-spec.js';

/** `250 ms`, `1.5 s`, `2 min`. */
export function durationText(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms >= 1000) return `${Number((ms / 1000).toFixed(3))} s`;
  return `${Number(ms.toFixed(3))} ms`;
}

/** A distribution in words: `exp. mean 5 ms`, `log-normal mean 30 s sigma 2`. */
export function distributionText(d: DistributionSpec): string {
  switch (d.type) {
    case 'fixed':
      return durationText(d.valueMs);
    case 'exponential':
      return `exp. mean ${durationText(d.meanMs)}`;
    case 'uniform':
      return `${durationText(d.minMs)}–${durationText(d.maxMs)}`;
    case 'pareto':
      return `Pareto mean ${durationText(d.meanMs)} shape ${d.shape}`;
    case 'lognormal':
      return `log-normal mean ${durationText(d.meanMs)} sigma ${d.sigma}`;
  }
}

/** `1 client`, `8 clients`. */
export function plural(n: number, word: string): string {
  return `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;
}

/** Client processes the scenario runs (one per connection unless `clients.count` is set). */
export function clientCount(s: Scenario): number {
  return s.clients.count ?? s.clients.connections;
}

/** `4 single-worker pods`, `8 pods with 2 workers each`. */
export function podsText(s: Scenario, count = s.pods.count): string {
  const w = s.pods.workers;
  return w === 1 ? `${plural(count, 'single-worker pod')}` : `${plural(count, 'pod')} with ${w} workers each`;
}

/**
 * Requests per second the first `pods` pods can serve at most: Σ speed × workers / mean service
 * time, with `pods.speeds` cycled as the pods are created, or the mean of `pods.speedDistribution`
 * (its expectation). Pauses and slowdowns are not counted: they are what capacity falls short by.
 *
 * @example
 * fleetCapacityPerSecond(s) // 8 pods × 4 workers / 10 ms, one at half speed: 3,000
 */
export function fleetCapacityPerSecond(s: Scenario, pods = s.pods.count): number {
  const p = s.pods;
  const speeds = p.speeds ?? [];
  let speedSum = 0;
  if (speeds.length > 0) for (let i = 0; i < pods; i++) speedSum += speeds[i % speeds.length] as number;
  else speedSum = pods * (p.speedDistribution === undefined ? 1 : meanSpeed(p.speedDistribution));
  return (speedSum * p.workers * 1000) / serviceMeanMs(p.serviceTime);
}

/**
 * Mean utilisation of `pods` pods (0..1+) under the open-loop arrival rate of all clients, or
 * undefined for closed-loop arrivals (their rate follows the latency).
 */
export function utilisation(s: Scenario, pods = s.pods.count): number | undefined {
  const a = s.clients.arrival;
  if (a.type === 'closed-loop') return undefined;
  return (clientCount(s) * a.ratePerSecond) / fleetCapacityPerSecond(s, pods);
}

/** A pod's name: `v<revision>-<ordinal>`, the ordinal zero-padded to the widest the scenario needs. */
export function podName(s: Scenario, revision: number, ordinal: number): string {
  let maxPods = s.pods.count;
  for (const e of s.events ?? []) if (e.type === 'scale') maxPods = Math.max(maxPods, e.pods);
  return `v${revision}-${String(ordinal).padStart(Math.max(2, String(maxPods).length), '0')}`;
}

/**
 * What makes pods unequal or slows them, in words (empty when nothing does): speeds other than
 * 1, drawn speeds, pauses, noisy neighbours and slowdown events.
 */
export function podDynamicsText(s: Scenario): string[] {
  const p = s.pods;
  const out: string[] = [];
  const speeds = p.speeds ?? [];
  if (speeds.some((v) => v !== 1))
    out.push(`pod speeds ${speeds.join(', ')}${speeds.length < p.count ? ' (cycled)' : ''}`);
  const d = p.speedDistribution;
  if (d !== undefined) {
    out.push(
      d.type === 'uniform'
        ? `pod speeds uniform ${d.min}–${d.max}`
        : `pod speeds log-normal mean ${d.mean} sigma ${d.sigma}`,
    );
  }
  if (p.pauses !== undefined) {
    out.push(`pauses of ${distributionText(p.pauses.duration)} after ${distributionText(p.pauses.interval)} running`);
  }
  const n = p.noisyNeighbours;
  if (n !== undefined) {
    out.push(
      `noisy neighbours: ${n.factor}× slower for ${distributionText(n.duration)} after ${distributionText(n.interval)}`,
    );
  }
  for (const e of s.events ?? []) {
    if (e.type !== 'slowdown') continue;
    out.push(
      `${podName(s, 1, e.pod + 1)} ${e.factor}× slower from ${durationText(e.atMs)} for ${durationText(e.durationMs)}`,
    );
  }
  return out;
}

/** `50%` busy, or `` when unknown. */
export function busyText(s: Scenario, pods = s.pods.count): string {
  const u = utilisation(s, pods);
  if (u === undefined) return '';
  const pct = u * 100;
  return `${pct < 10 ? Number(pct.toFixed(1)) : Math.round(pct)}%`;
}

/** `Poisson`, `evenly spaced`, `closed-loop`. */
export function arrivalText(s: Scenario): string {
  const a = s.clients.arrival;
  if (a.type === 'closed-loop') return `closed-loop (${a.concurrency} outstanding)`;
  return `${a.type === 'poisson' ? 'Poisson' : 'evenly spaced'} traffic, ${a.ratePerSecond} req/s per client`;
}

function serviceMeanMs(d: DistributionSpec): number {
  switch (d.type) {
    case 'fixed':
      return d.valueMs;
    case 'uniform':
      return (d.minMs + d.maxMs) / 2;
    default:
      return d.meanMs;
  }
}
