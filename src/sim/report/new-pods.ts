/**
 * How fast pods added by a scale-out or a rollout get their share, from one run's per-pod
 * buckets: the time until the new pods together reach 90% of their fair share, and their
 * share bucket by bucket after the first of them became ready, as a multiple of their fair
 * share (1 = fair; above 1 = a herd on the new pods; below = not yet discovered or pinned
 * connections). Fair share of a bucket = new ready pods / all ready pods, counting only pods
 * ready for the whole bucket.
 */
import type { SimulationOutcome } from '../model/simulation-outcome.js';

/** The fraction of a new pod's fair share that counts as "reached". */
const FAIR_SHARE_REACHED = 0.9;

/** Buckets reported after the first new pod became ready. */
export const RAMP_BUCKETS = 10;

interface BucketShare {
  readonly endMs: number;
  /** New pods' share of the bucket's requests over their fair share; null when not defined. */
  readonly overFair: number | null;
}

function* bucketShares(o: SimulationOutcome): Generator<BucketShare> {
  const fresh = o.pods.filter((p) => !p.initial && p.readyAtMs !== undefined);
  if (fresh.length === 0) return;
  const t0 = Math.min(...fresh.map((p) => p.readyAtMs as number));
  const w = o.bucketMs;
  for (let b = Math.ceil(t0 / w); (b + 1) * w <= o.windowEndMs + 1e-6; b++) {
    const start = b * w;
    const end = start + w;
    let total = 0;
    let readyCount = 0;
    let newReady = 0;
    let newRequests = 0;
    for (const p of o.pods) {
      const requests = (p.series[b] as number | undefined) ?? 0;
      total += requests;
      const ready =
        p.readyAtMs !== undefined && p.readyAtMs <= start && (p.removedAtMs === undefined || p.removedAtMs >= end);
      if (!ready) continue;
      readyCount++;
      if (!p.initial) {
        newReady++;
        newRequests += requests;
      }
    }
    const defined = newReady > 0 && total > 0;
    yield { endMs: end - t0, overFair: defined ? newRequests / total / (newReady / readyCount) : null };
  }
}

/**
 * ms from the first new pod becoming ready until the new pods, together, first received at
 * least 90% of their fair share of a bucket's requests; null when that never happened before
 * the run ended (or no pod was added).
 */
export function timeToFairShare(o: SimulationOutcome): number | null {
  for (const s of bucketShares(o)) {
    if (s.overFair !== null && s.overFair >= FAIR_SHARE_REACHED) return s.endMs;
  }
  return null;
}

/** The new pods' share over their fair share in each of the first `RAMP_BUCKETS` buckets after ready (null: undefined). */
export function newPodsRamp(o: SimulationOutcome): (number | null)[] {
  const out: (number | null)[] = [];
  for (const s of bucketShares(o)) {
    out.push(s.overFair);
    if (out.length === RAMP_BUCKETS) break;
  }
  return out;
}
