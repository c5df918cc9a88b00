/**
 * Bounds on a scenario's simulated time: a generous cap past which a run is a scenario that
 * cannot settle (an error, not a hang), and a rough end for progress bars.
 */
import { isDeploymentChange, type Scenario } from '../scenario/scenario-spec.js';

/** A generous bound on simulated time: a run past it is a scenario that cannot settle. */
export function timeCapMs(s: Scenario): number {
  const events = s.events ?? [];
  const lastAt = events.reduce((m, e) => Math.max(m, e.atMs), 0);
  let maxPods = s.pods.count;
  for (const e of events) if (e.type === 'scale') maxPods = Math.max(maxPods, e.pods);
  const perStep = s.pods.readyDelayMs + s.server.terminationDrainMs + 1000;
  const changes = events.filter(isDeploymentChange).length;
  const settle = lastAt + (changes * (2 * maxPods + 4) + 4) * perStep;
  const from = typeof s.measure.from === 'number' ? s.measure.from : settle;
  if (s.measure.windowMs !== undefined) return Math.max(from, settle) + s.measure.windowMs + 1;
  return Number.POSITIVE_INFINITY;
}

/** A rough end of simulated time, for progress bars only. */
export function estimateEndMs(s: Scenario): number {
  const events = s.events ?? [];
  const lastChange = events.reduce((m, e) => (isDeploymentChange(e) ? Math.max(m, e.atMs) : m), 0);
  let settle = lastChange;
  for (const e of events) {
    if (e.type === 'rolling-update') settle += s.pods.count * (s.pods.readyDelayMs + s.server.terminationDrainMs);
    if (e.type === 'scale') settle += s.pods.readyDelayMs;
  }
  const from = typeof s.measure.from === 'number' ? s.measure.from : s.measure.from === 'start' ? 0 : settle;
  if (s.measure.windowMs !== undefined) return Math.max(1, from + s.measure.windowMs);
  const a = s.clients.arrival;
  const count = a.count ?? 1;
  if (a.type === 'closed-loop')
    return Math.max(
      1,
      (count / a.concurrency) * (s.pods.serviceTime.type === 'fixed' ? s.pods.serviceTime.valueMs : 5),
    );
  return Math.max(1, (count * 1000) / a.ratePerSecond);
}
