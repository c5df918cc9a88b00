/**
 * Requests per pod per time bucket, counted on the hot path: one row per bucket, indexed by
 * pod index — a contiguous typed array even for ten thousand pods, grown by doubling — and
 * copied into each pod's own series when the run ends.
 */
import type { SimPod } from './sim-pod.js';

export class PodSeries {
  readonly bucketMs: number;
  readonly #rows: Float64Array[] = [];

  constructor(bucketMs: number) {
    this.bucketMs = bucketMs;
  }

  /** Counts one request arriving at pod `podIndex` at `nowMs`; `podCount` sizes a new row. */
  count(nowMs: number, podIndex: number, podCount: number): void {
    const bucket = Math.floor(nowMs / this.bucketMs);
    let row = this.#rows[bucket];
    if (row === undefined || podIndex >= row.length) row = this.#grow(bucket, podCount);
    row[podIndex] = (row[podIndex] as number) + 1;
  }

  /** Fills every pod's `series` (one entry per bucket so far). */
  copyTo(pods: readonly SimPod[]): void {
    const buckets = this.#rows.length;
    for (const pod of pods) {
      pod.series = new Float64Array(buckets);
      for (let b = 0; b < buckets; b++) pod.series[b] = this.#rows[b]?.[pod.index] ?? 0;
    }
  }

  #grow(bucket: number, podCount: number): Float64Array {
    const old = this.#rows[bucket];
    let size = old === undefined ? 64 : old.length;
    while (size < podCount) size *= 2;
    const row = new Float64Array(size);
    if (old !== undefined) row.set(old);
    this.#rows[bucket] = row;
    return row;
  }
}
