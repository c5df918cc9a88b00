/**
 * Words for a validated scenario: durations, distributions, pod and client counts and the
 * pods' average utilisation, as the built-in scenarios' descriptions and the report's
 * settings lines use them. Everything is computed from the final spec (knobs applied), so a
 * description never repeats a number the run did not use.
 */
import type { DistributionSpec } from '../workload/distribution.js';
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
 * Mean utilisation of `pods` pods (0..1+) under the open-loop arrival rate of all clients, or
 * undefined for closed-loop arrivals (their rate follows the latency).
 */
export function utilisation(s: Scenario, pods = s.pods.count): number | undefined {
  const a = s.clients.arrival;
  if (a.type === 'closed-loop') return undefined;
  const speeds = s.pods.speeds ?? [];
  const speed = speeds.length === 0 ? 1 : speeds.reduce((x, y) => x + y, 0) / speeds.length;
  const meanMs = serviceMeanMs(s.pods.serviceTime);
  return (clientCount(s) * a.ratePerSecond * meanMs) / 1000 / (pods * s.pods.workers * speed);
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
